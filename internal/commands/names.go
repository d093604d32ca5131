package commands

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// MaxClusterName is the longest cluster name. Resource names are "poc-" + cluster + a part such
// as "-cp-3", "-edge-01", "-ip-cp-3" or "-sg" (at most 10 more characters), which keeps every
// Scaleway resource name, hostname and DNS label under 63 characters with room to spare.
const MaxClusterName = 40

// hashLen is the length of the hex hash added to shortened or ambiguous names: 6 hex digits
// (24 bits) is plenty, since two names only collide when their readable part and issue number
// are already equal.
const hashLen = 6

// ClusterName names the cluster of issue or PR `number` of owner/repo: "<owner>-<repo>-<number>",
// lowercased, every run of characters other than a-z and 0-9 turned into one "-".
//
// A short stable hash of "owner/repo#number" (lowercased: GitHub names are case-insensitive) is
// inserted before the number — "<owner>-<repo>-<hash>-<number>" — when
//   - the name would be longer than MaxClusterName (the readable part is cut to fit), or
//   - the translation lost information: the repository name holds '.', '_', or a run of
//     separators, so that "acme/my.app" and "acme/my-app" do not share one cluster.
//
// One ambiguity stays, on purpose, to keep the common names readable: the owner/repo boundary
// ("a-b/c" and "a/b-c" both give "a-b-c-1"). Two such repositories would have to share one
// Scaleway project and state bucket to meet; the state header records the repository and number,
// and a handler must refuse to act when they differ from the comment's.
func ClusterName(owner, repo string, number int) string {
	owner, repo = strings.ToLower(owner), strings.ToLower(repo)
	base, lossy := sanitize(owner + "/" + repo)
	num := strconv.Itoa(number)
	if number < 0 {
		num = "n" + strconv.Itoa(-number)
		lossy = true
	}
	if base == "" {
		base, lossy = "repo", true
	}
	name := base + "-" + num
	if !lossy && len(name) <= MaxClusterName {
		return name
	}
	sum := sha256.Sum256([]byte(owner + "/" + repo + "#" + strconv.Itoa(number)))
	suffix := "-" + hex.EncodeToString(sum[:])[:hashLen] + "-" + num
	if keep := MaxClusterName - len(suffix); len(base) > keep {
		base = strings.TrimRight(base[:max(keep, 0)], "-")
	}
	if base == "" {
		return strings.TrimPrefix(suffix, "-")
	}
	return base + suffix
}

// sanitize maps s to [a-z0-9-] with runs collapsed and no '-' at either end. lossy reports a
// change beyond the one separator GitHub guarantees: anything but a single '-' or the single '/'
// between owner and repository was rewritten or dropped.
func sanitize(s string) (out string, lossy bool) {
	var b strings.Builder
	pendingDash := false
	sepRun := 0
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if pendingDash && b.Len() > 0 {
				b.WriteByte('-')
			}
			if sepRun > 1 || (pendingDash && b.Len() == 0) {
				lossy = true
			}
			pendingDash, sepRun = false, 0
			b.WriteRune(r)
			continue
		}
		if r != '-' && r != '/' {
			lossy = true
		}
		pendingDash = true
		sepRun++
	}
	if pendingDash {
		lossy = true
	}
	return b.String(), lossy
}

// ValidClusterName checks a name given to the operator CLI (--cluster): what ClusterName can
// produce — lowercase letters, digits and single inner hyphens, at most MaxClusterName long.
func ValidClusterName(name string) error {
	if name == "" {
		return fmt.Errorf("cluster name is empty: give one like acme-shop-42 (owner-repo-number)")
	}
	if len(name) > MaxClusterName {
		return fmt.Errorf("cluster name %q is %d characters long: at most %d", name, len(name), MaxClusterName)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return fmt.Errorf("cluster name %q holds %q: only lowercase letters, digits and '-' are allowed", name, string(c))
		}
	}
	if name[0] == '-' || name[len(name)-1] == '-' || strings.Contains(name, "--") {
		return fmt.Errorf("cluster name %q must not start or end with '-' nor hold \"--\"", name)
	}
	return nil
}
