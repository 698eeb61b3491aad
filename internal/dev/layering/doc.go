// Package layering holds no code: its test checks that the module's
// dependencies point one way. Each outside technology has one package
// (fsnotify: internal/plumbing/fswake; nats.go: internal/transport/natsbus),
// and the watcher is imported by the programs that run it, not by a
// library reusing a helper of it.
//
// Run it with go test ./internal/dev/layering/.
package layering
