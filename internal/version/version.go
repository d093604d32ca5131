// Package version holds the build's version, stamped at link time by goreleaser (and by `make
// build`) with -ldflags "-X github.com/pocbot/pocbot/internal/version.Version=v1.2.3", and the
// User-Agent every outbound client sends, so that Scaleway, GitHub, Object Storage and the Image
// Factory can tell pocbot's traffic (and its version) apart.
package version

import "runtime/debug"

// Version is the release tag, set at link time; "dev" for a plain `go build`, unless the module
// was built by `go install …@vX` (then the module version from the build info is used).
var Version = "dev"

// Commit is the source revision, set at link time; the VCS stamp of the build info otherwise.
var Commit = ""

// String returns the version to print and send.
func String() string {
	if Version != "dev" && Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// Revision returns the source revision, "" when unknown.
func Revision() string {
	if Commit != "" {
		return Commit
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return ""
}

// Product is the name of the User-Agent product token.
const Product = "pocbot"

// UserAgent is "pocbot/<version>", the User-Agent (or its leading product) of every client.
func UserAgent() string { return Product + "/" + String() }
