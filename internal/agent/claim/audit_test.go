package claim

import (
	"testing"
)

func TestParseFile(t *testing.T) {
	const id = "msg-20260111-163316-claude-9f2a"
	for _, c := range []struct {
		name string
		gen  int
		kind string
		ok   bool
	}{
		{id + ".json", 0, KindClaim, true},
		{id + ".3.json", 3, KindClaim, true},
		{id + ".reply", 0, KindToken, true},
		{id + ".reply.2", 2, KindToken, true},
		{id + ".0.json", 0, "", false},
		{id + ".03.json", 0, "", false},
		{id + ".reply.0", 0, "", false},
		{id + ".reply.", 0, "", false},
		{id + ".replyx", 0, "", false},
		{id + ".seen", 0, "", false},
		{id + ".x.json", 0, "", false},
		{"../x.json", 0, "", false},
		{".json", 0, "", false},
		{"", 0, "", false},
	} {
		gotID, gen, kind, ok := parseFile(c.name)
		if ok != c.ok || ok && (gotID != id || gen != c.gen || kind != c.kind) {
			t.Errorf("parseFile(%q) = %q %d %q %v; want %d %q %v", c.name, gotID, gen, kind, ok, c.gen, c.kind, c.ok)
		}
	}
}

func FuzzParseFile(f *testing.F) {
	for _, s := range []string{"msg-20260111-163316-claude-9f2a.json", "m.2.json", "m.reply.7", "m.reply", "..", ".reply.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		id, gen, kind, ok := parseFile(name)
		if !ok {
			return
		}
		// What parses names the same file again.
		var again string
		switch {
		case kind == KindClaim:
			again = genName(id, gen)
		case kind == KindToken:
			again = tokenName(id, gen)
		}
		if again != name || checkID(id) != nil || gen < 0 || gen >= maxGen {
			t.Fatalf("parseFile(%q) = %q %d %q: names %q", name, id, gen, kind, again)
		}
	})
}
