package repoinit

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

// The policy init prints is docs/install.md's, placeholders filled in.
func TestBucketPolicyIsTheDocs(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile("../../docs/install.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(page), "```json\n{\n  \"Version\": \"2023-04-17\"")
	if !ok {
		t.Fatal("docs/install.md has no bucket policy block")
	}
	block, _, _ := strings.Cut(after, "```")
	var doc, got any
	if err := json.Unmarshal([]byte("{\n  \"Version\": \"2023-04-17\""+block), &doc); err != nil {
		t.Fatalf("docs/install.md's policy: %v", err)
	}
	// The page writes a single principal as a string; Scaleway takes a list too.
	policy := BucketPolicy("STATE-BUCKET", "<BOT-APPLICATION-ID>", "<PRESIGN-APPLICATION-ID>", "user_id:<YOUR-USER-ID>")
	policy = strings.Replace(policy, `["application_id:<PRESIGN-APPLICATION-ID>"]`, `"application_id:<PRESIGN-APPLICATION-ID>"`, 1)
	if err := json.Unmarshal([]byte(policy), &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(doc, got) {
		t.Fatalf("BucketPolicy differs from docs/install.md:\n got %s\nwant %s", policy, block)
	}
}
