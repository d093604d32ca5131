package wiring

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"gocloud.dev/blob"

	"github.com/pocbot/pocbot/internal/settings"
	"github.com/pocbot/pocbot/internal/statestore"
)

// OpenStore opens POC_STATE_URL with POC_STATE_KEY; an s3:// bucket is opened with static
// credentials from getenv (see OpenS3). The buckets it opens besides the store's own are closed by
// the functions it appends to closers (the store's Close does not close them).
func OpenStore(ctx context.Context, getenv func(string) string, log *slog.Logger, closers *[]func()) (*statestore.Store, error) {
	scfg, err := statestore.ConfigFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	opts := []statestore.Option{statestore.WithLogger(log)}
	var sb *blob.Bucket
	if strings.HasPrefix(scfg.StateURL, "s3://") {
		if sb, err = OpenS3(ctx, scfg.StateURL, getenv); err != nil {
			return nil, fmt.Errorf("open the state bucket %s: %w", statestore.EnvStateURL, err)
		}
		opts = append(opts, statestore.WithBucket(sb))
	}
	pb, err := openPresign(ctx, scfg.StateURL, getenv)
	if err != nil {
		if sb != nil {
			_ = sb.Close()
		}
		return nil, err
	}
	if pb != nil {
		opts = append(opts, statestore.WithPresignBucket(pb))
	}
	store, err := statestore.Open(ctx, scfg, opts...)
	if err != nil {
		for _, b := range []*blob.Bucket{sb, pb} {
			if b != nil {
				_ = b.Close()
			}
		}
		return nil, err
	}
	for _, b := range []*blob.Bucket{sb, pb} {
		if b != nil {
			*closers = append(*closers, func() { _ = b.Close() })
		}
	}
	return store, nil
}

// Presigning credential: the access key id of whoever signs a link is in the link
// (X-Amz-Credential), and kubeconfig links are posted in public comments and step outputs. A
// separate key that may only read public/ (docs/install.md gives its bucket policy) keeps the main
// key's id out of them.
const (
	envPresignAccessKey = "POC_PRESIGN_ACCESS_KEY"
	envPresignSecretKey = "POC_PRESIGN_SECRET_KEY"
)

// openPresign opens the state bucket again with the presigning credential, when one is set
// (nil, nil when not, or when the state is not in S3: file:// links are not signed).
func openPresign(ctx context.Context, stateURL string, getenv func(string) string) (*blob.Bucket, error) {
	ak, sk := settings.Env(getenv).String("presign-access-key"), settings.Env(getenv).String("presign-secret-key")
	switch {
	case ak == "" && sk == "":
		return nil, nil
	case ak == "" || sk == "":
		return nil, fmt.Errorf("%s and %s go together: set both (the read-only key that signs kubeconfig links) or neither", envPresignAccessKey, envPresignSecretKey)
	case !strings.HasPrefix(stateURL, "s3://"):
		return nil, nil
	}
	b, err := OpenS3(ctx, stateURL, func(k string) string {
		switch k {
		case "AWS_ACCESS_KEY_ID":
			return ak
		case "AWS_SECRET_ACCESS_KEY":
			return sk
		}
		return getenv(k)
	})
	if err != nil {
		return nil, fmt.Errorf("open the state bucket with %s: %w", envPresignAccessKey, err)
	}
	return b, nil
}
