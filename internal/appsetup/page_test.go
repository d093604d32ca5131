package appsetup

import (
	"html"
	"regexp"
	"strings"
	"testing"
)

// TestPageEscapesEveryValue: the page is written without html/template (see writePage), so each
// value must come out escaped: a hostile owner, action or manifest neither closes its element or
// attribute nor adds markup, and reads back (unescaped, as a browser does) as given.
func TestPageEscapesEveryValue(t *testing.T) {
	hostile := `"><script>alert('x')</script>&amp;`
	for _, tc := range []struct{ name, action, manifest, owner string }{
		{"plain", "https://github.com/settings/apps/new?state=ab", `{"name":"pocbot"}`, "acme"},
		{"hostile owner", "https://github.com/settings/apps/new?state=ab", `{"name":"pocbot"}`, hostile},
		{"hostile action", hostile, `{"name":"pocbot"}`, "acme"},
		{"hostile manifest", "https://github.com/settings/apps/new?state=ab", `{"name":"` + hostile + `"}`, "acme"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			writePage(&b, tc.action, tc.manifest, tc.owner)
			page := b.String()
			if n := strings.Count(page, "<script>"); n != 1 {
				t.Errorf("%d <script> elements, want only the page's own one:\n%s", n, page)
			}
			for re, want := range map[*regexp.Regexp]string{
				regexp.MustCompile(`<p>Registering the pocbot GitHub App for ([^<]*)\. GitHub`): tc.owner,
				regexp.MustCompile(`action="([^"]*)"`):                                          tc.action,
				regexp.MustCompile(`name="manifest" value="([^"]*)"`):                           tc.manifest,
			} {
				m := re.FindStringSubmatch(page)
				if m == nil {
					t.Errorf("no match for %s in:\n%s", re, page)
					continue
				}
				if got := html.UnescapeString(m[1]); got != want {
					t.Errorf("%s reads back %q, want %q", re, got, want)
				}
			}
		})
	}
}
