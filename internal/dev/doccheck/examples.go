package doccheck

import (
	"regexp"
	"strings"
)

// A Block is a fenced shell example (```sh) of a Markdown text.
type Block struct {
	Line   int    // the line of its opening fence
	Text   string // its lines, without the fences or their indent
	NotRun string // why it is not run: the "<!-- not run: WHY -->" before it
}

var notRunRE = regexp.MustCompile(`^<!--\s*not run:\s*(.*?)\s*-->$`)

// Blocks returns the ```sh blocks of a Markdown text. A block that the
// docs' tests cannot run says why on the line before it, as an HTML
// comment the page does not show: <!-- not run: needs a shared mount -->.
func Blocks(text string) []Block {
	var blocks []Block
	var cur *Block
	indent, prev := "", ""
	for i, line := range strings.Split(text, "\n") {
		t := strings.TrimLeft(line, " ")
		switch {
		case cur == nil && (t == "```sh" || strings.HasPrefix(t, "```sh ")):
			cur = &Block{Line: i + 1}
			indent = line[:len(line)-len(t)]
			if m := notRunRE.FindStringSubmatch(prev); m != nil {
				cur.NotRun = m[1]
				if cur.NotRun == "" {
					cur.NotRun = "(no reason given)"
				}
			}
		case cur != nil && strings.TrimSpace(line) == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.Text += strings.TrimPrefix(line, indent) + "\n"
		}
		if strings.TrimSpace(line) != "" {
			prev = strings.TrimSpace(line)
		}
	}
	return blocks
}

// An Invocation is a collab command in an example: its words after
// "collab" up to the end of that command.
type Invocation struct {
	Words []string
}

// Flags returns the long flags an invocation uses (--name of --name=V),
// up to a bare "--" (what follows is another program's: collab join's
// CLI arguments).
func (c Invocation) Flags() []string {
	var flags []string
	for _, w := range c.Words {
		if w == "--" {
			break
		}
		if strings.HasPrefix(w, "--") && len(w) > 2 {
			name, _, _ := strings.Cut(w, "=")
			flags = append(flags, name)
		}
	}
	return flags
}

// Invocations returns the collab commands of a shell example: every word
// "collab" that starts a command (at a line's start, after a prompt "$ ",
// a pipe, "&&", ";", "$(" or "sudo … "), with the words that follow it
// until the command ends.
func Invocations(script string) []Invocation {
	var out []Invocation
	script = strings.ReplaceAll(script, "\\\n", " ")
	for _, line := range strings.Split(script, "\n") {
		line = strings.TrimPrefix(strings.TrimSpace(line), "$ ")
		words := shellWords(line)
		start := true
		for i := 0; i < len(words); i++ {
			w := words[i]
			switch {
			case isSeparator(w):
				start = true
				continue
			case start && w == "sudo":
				for i+1 < len(words) && strings.HasPrefix(words[i+1], "-") { // sudo -u admin
					i += 2
				}
				continue
			case start && w == "collab":
				j := i + 1
				for j < len(words) && !isSeparator(words[j]) {
					j++
				}
				out = append(out, Invocation{Words: words[i+1 : j]})
				i = j - 1
			}
			start = false
		}
	}
	return out
}

func isSeparator(w string) bool {
	switch w {
	case "|", "||", "&&", ";", "&", "$(", "(", ")":
		return true
	}
	return false
}

// shellWords splits a line into words as a shell would, well enough for
// examples: quotes group, "#" at a word's start begins a comment, and
// the operators |, ||, &&, ;, &, $( and ) are words of their own.
func shellWords(line string) []string {
	var words []string
	var b strings.Builder
	in := false // b holds a word
	flush := func() {
		if in {
			words = append(words, b.String())
			b.Reset()
			in = false
		}
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'' || c == '"':
			j := strings.IndexByte(line[i+1:], c)
			if j < 0 {
				j = len(line) - i - 1
			}
			b.WriteString(line[i+1 : i+1+j])
			in = true
			i += j + 1
		case c == ' ' || c == '\t':
			flush()
		case c == '#' && !in:
			return words
		case c == '$' && i+1 < len(line) && line[i+1] == '(':
			flush()
			words = append(words, "$(")
			i++
		case c == '|' || c == '&' || c == ';' || c == '(' || c == ')':
			flush()
			op := string(c)
			if (c == '|' || c == '&') && i+1 < len(line) && line[i+1] == c {
				op += string(c)
				i++
			}
			words = append(words, op)
		default:
			b.WriteByte(c)
			in = true
		}
	}
	flush()
	return words
}
