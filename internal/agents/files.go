package agents

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// File is a file WriteFiles made.
type File struct {
	Path string // absolute
	// Fact is a sentence planted once in the file (a test can look for it
	// in what the upstream received).
	Fact string
	Size int
}

var words = strings.Fields("alpha bravo cache delta engine fold gamma header index journal kernel ledger merge " +
	"node offset parser queue record stream token upstream vector window yield buffer cursor digest " +
	"encoder frame gauge handler limit marker packet quota router scope tracker")

// WriteFiles writes n Go-like source files of about size bytes each into
// dir (file_00.go, file_01.go…), deterministic and all different, each
// with one planted Fact; it returns them in order.
func WriteFiles(dir string, n, size int) ([]File, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	var out []File
	for i := range n {
		r := rand.New(rand.NewPCG(uint64(i)+1, 42))
		var b strings.Builder
		fact := fmt.Sprintf("FACT file_%02d: the %s codename is %s-%d.", i, words[r.IntN(len(words))], words[r.IntN(len(words))], r.IntN(90000)+10000)
		fmt.Fprintf(&b, "// Package file%02d is generated test data for condense-proxy's agent tests.\npackage file%02d\n\nimport (\n\t\"errors\"\n\t\"fmt\"\n)\n\n", i, i)
		for f := 0; b.Len() < size; f++ {
			name := fmt.Sprintf("%s%s%02d_%03d", words[r.IntN(len(words))], strings.ToUpper(words[r.IntN(len(words))][:1]), i, f)
			if f == 3 {
				fmt.Fprintf(&b, "// %s\n", fact)
			}
			fmt.Fprintf(&b, "// %s %s the %s of a %s before the %s is flushed.\n", name, words[r.IntN(len(words))], words[r.IntN(len(words))], words[r.IntN(len(words))], words[r.IntN(len(words))])
			fmt.Fprintf(&b, "func %s(%s int, %s string) (string, error) {\n", name, words[r.IntN(len(words))], words[r.IntN(len(words))]+"Name")
			for l := 0; l < 6+r.IntN(6); l++ {
				v := words[r.IntN(len(words))]
				switch r.IntN(4) {
				case 0:
					fmt.Fprintf(&b, "\t%sCount := %d * len(%q)\n\t_ = %sCount\n", v, r.IntN(1000), words[r.IntN(len(words))], v)
				case 1:
					fmt.Fprintf(&b, "\tif %d > %d {\n\t\treturn \"\", errors.New(%q)\n\t}\n", r.IntN(100), r.IntN(100), words[r.IntN(len(words))]+" "+words[r.IntN(len(words))]+" failed")
				case 2:
					fmt.Fprintf(&b, "\t// %s %s %s %s %d\n", words[r.IntN(len(words))], words[r.IntN(len(words))], words[r.IntN(len(words))], words[r.IntN(len(words))], r.IntN(1e6))
				default:
					fmt.Fprintf(&b, "\t_ = fmt.Sprintf(\"%%s-%%d\", %q, %d)\n", words[r.IntN(len(words))], r.IntN(1e5))
				}
			}
			fmt.Fprintf(&b, "\treturn fmt.Sprint(%d), nil\n}\n\n", r.IntN(1e6))
		}
		p := filepath.Join(abs, fmt.Sprintf("file_%02d.go", i))
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			return nil, err
		}
		out = append(out, File{Path: p, Fact: fact, Size: b.Len()})
	}
	return out, nil
}
