package mcpserver

import (
	"context"
	"fmt"
	"io"
	"time"
)

// ServeStdio makes the server cfg describes and serves it over r and w
// (RunIO) until the client goes, then logs how long the session lasted
// and how it ended, on cfg.Logger at info.
func ServeStdio(ctx context.Context, cfg Config, r io.Reader, w io.Writer) error {
	s, err := New(cfg)
	if err != nil {
		return err
	}
	start := time.Now()
	err = s.RunIO(ctx, r, w)
	s.cfg.Logger.Info("mcp session ended", "agent", cfg.Agent, "took", time.Since(start).Round(time.Millisecond), keyErr, err)
	if err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	return nil
}
