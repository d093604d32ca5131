package repoinit

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"
	"github.com/scaleway/scaleway-sdk-go/scw"
)

// BucketPolicy is the state bucket's policy of docs/install.md (*Presigning key*), in Scaleway's
// format (bucket-policy.mdx: version 2023-04-17, principals "SCW": "application_id:…"/"user_id:…",
// resources "BUCKET" and "BUCKET/prefix*"): the bot's application and admin (the principal of
// whoever administers the bucket, "user_id:…" or "application_id:…") keep every right, the
// presigning application may only GET objects under public/. TestBucketPolicyIsTheDocs keeps it
// equal to the page's.
func BucketPolicy(bucket, botApp, presignApp, admin string) string {
	type statement struct {
		Sid       string              `json:"Sid"`
		Effect    string              `json:"Effect"`
		Principal map[string][]string `json:"Principal"`
		Action    []string            `json:"Action"`
		Resource  []string            `json:"Resource"`
	}
	p := struct {
		Version   string      `json:"Version"`
		ID        string      `json:"Id"`
		Statement []statement `json:"Statement"`
	}{Version: "2023-04-17", ID: "pocbot-state", Statement: []statement{
		{Sid: "BotFullAccess", Effect: "Allow", Principal: map[string][]string{"SCW": {"application_id:" + botApp, admin}},
			Action: []string{"s3:*"}, Resource: []string{bucket, bucket + "/*"}},
		{Sid: "PresignReadsPublicOnly", Effect: "Allow", Principal: map[string][]string{"SCW": {"application_id:" + presignApp}},
			Action: []string{"s3:GetObject"}, Resource: []string{bucket + "/public/*"}},
	}}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(p) // plain strings: cannot fail
	return strings.TrimSpace(b.String())
}

// policyHint prints the state bucket's policy with the real ids, for the user to apply (init does
// not put it yet: the stand-in cannot check Scaleway's principals). It only reads.
func (r *runner) policyHint(ctx context.Context) error {
	x := r.cfg.IAM
	var state *Bucket
	for i := range r.cfg.Buckets {
		if r.cfg.Buckets[i].Role == "state" {
			state = &r.cfg.Buckets[i]
		}
	}
	if x == nil || state == nil || r.cfg.DryRun {
		return nil
	}
	api := iam.NewAPI(x.Client)
	ids := map[string]string{}
	for _, id := range identities {
		// The project's applications, as init's record names them (found or made above).
		if e := r.rec.identity(id.name, x.ProjectID); e != nil {
			ids[id.name] = e.ApplicationID
		} else if f, err := findApplication(ctx, api, x, id, r.rec); err != nil {
			return fmt.Errorf("init: %w", err)
		} else if f != nil {
			ids[id.name] = f.app.ID
		}
	}
	admin := "user_id:<YOUR-USER-ID>"
	if ak, ok := x.Client.GetAccessKey(); ok {
		if k, err := api.GetAPIKey(&iam.GetAPIKeyRequest{AccessKey: ak}, scw.WithContext(ctx)); err == nil {
			switch {
			case k.UserID != nil && *k.UserID != "":
				admin = "user_id:" + *k.UserID
			case k.ApplicationID != nil && *k.ApplicationID != "":
				admin = "application_id:" + *k.ApplicationID
			}
		}
	}
	if ids["pocbot"] == "" || ids["pocbot-presign"] == "" {
		return nil
	}
	endpoint := "https://s3.fr-par.scw.cloud"
	if e := state.Client.Options().BaseEndpoint; e != nil && *e != "" {
		endpoint = *e // POC_STATE_URL's endpoint
	}
	fmt.Fprintf(r.out, "! init does not put the state bucket's policy yet: to limit the presigning key to public/ (docs/install.md, \"Presigning key\"), run\n"+
		"  aws s3api put-bucket-policy --bucket %s --endpoint-url %s --policy '%s'\n",
		state.Name, endpoint, BucketPolicy(state.Name, ids["pocbot"], ids["pocbot-presign"], admin))
	return nil
}
