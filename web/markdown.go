package web

import (
	"bytes"
	"html/template"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// md renders what people write (descriptions of assets and columns, glossary definitions) as
// Markdown. Anyone with a write token writes it and everyone reads it, so it is rendered safely:
// without html.WithUnsafe raw HTML is dropped, and links and images go through safeLinks, which
// keeps only schemes a reader can follow without harm.
var md = goldmark.New(
	goldmark.WithExtensions(extension.GFM),
	goldmark.WithParserOptions(parser.WithASTTransformers(util.Prioritized(safeLinks{}, 100))),
)

// markdown renders src, or answers it escaped when it cannot be rendered.
func markdown(src string) template.HTML {
	if strings.TrimSpace(src) == "" {
		return ""
	}
	var buf bytes.Buffer
	if err := md.Convert([]byte(src), &buf); err != nil {
		return template.HTML("<p>" + template.HTMLEscapeString(src) + "</p>")
	}
	return template.HTML(buf.String()) // goldmark's safe mode: see md
}

// safeLinks turns links with a scheme other than http, https or mailto (javascript:, data:,
// vbscript:, anything new) into their plain text, and marks the rest rel="nofollow noopener":
// goldmark alone would keep such a link as an element with an empty href. Images keep only
// relative and http(s) sources; the page's Content-Security-Policy blocks other origins anyway.
type safeLinks struct{}

func (safeLinks) Transform(doc *ast.Document, reader text.Reader, _ parser.Context) {
	src := reader.Source()
	var drop []ast.Node
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch x := n.(type) {
		case *ast.Link:
			if !safeURL(string(x.Destination)) {
				drop = append(drop, x)
				return ast.WalkSkipChildren, nil
			}
			x.SetAttributeString("rel", []byte("nofollow noopener"))
		case *ast.AutoLink:
			if !safeURL(string(x.URL(src))) {
				drop = append(drop, x)
				return ast.WalkSkipChildren, nil
			}
		case *ast.Image:
			if d := string(x.Destination); !safeURL(d) || strings.HasPrefix(strings.ToLower(d), "mailto:") {
				drop = append(drop, x)
				return ast.WalkSkipChildren, nil
			}
		}
		return ast.WalkContinue, nil
	})
	for _, n := range drop {
		parent := n.Parent()
		if parent == nil {
			continue
		}
		if a, ok := n.(*ast.AutoLink); ok {
			parent.ReplaceChild(parent, n, ast.NewString(a.Label(src)))
			continue
		}
		// A link's (or an image's alt) text stays, as text.
		for c := n.FirstChild(); c != nil; {
			next := c.NextSibling()
			parent.InsertBefore(parent, n, c)
			c = next
		}
		parent.RemoveChild(parent, n)
	}
}

// safeURL reports whether a link destination is relative, a fragment, or http(s) or mailto. It
// judges the destination as the browser will see it: character references resolved (goldmark
// resolves them when it renders), and white space and control characters gone (browsers drop
// them from URLs).
func safeURL(dest string) bool {
	u := string(util.ResolveEntityNames(util.ResolveNumericReferences([]byte(dest))))
	u = strings.Map(func(r rune) rune {
		if r <= ' ' || r == 0x7f {
			return -1
		}
		return r
	}, u)
	colon := strings.IndexByte(u, ':')
	if colon < 0 {
		return true // no scheme: relative
	}
	for i, r := range u[:colon] {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		if !letter && (i == 0 || !(r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.')) {
			return true // not a scheme: a relative path with a colon in it ("a/b:c", "#x:y")
		}
	}
	switch strings.ToLower(u[:colon]) {
	case "http", "https", "mailto":
		return true
	}
	return false
}
