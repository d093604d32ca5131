package objstore

import (
	"context"
	"encoding/xml"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// version is one version of an object, or a delete marker, as ListObjectVersions lists it.
type version struct {
	key, id  string
	marker   bool
	modified time.Time
}

// ApplyLifecycle runs, as of now, the lifecycle rules the buckets hold (versitygw's posix
// backend has none): an enabled rule's NoncurrentVersionExpiration deletes the versions that
// have been noncurrent for its NoncurrentDays (noncurrent since their successor was written), and
// its Expiration ExpiredObjectDeleteMarker deletes a delete marker left with no other version —
// unless register row delete-markers plays kept. Scaleway runs its rules once a day
// (manage-lifecycle-rules.mdx); tests call this with a now of their choosing. It returns how many
// versions and markers it deleted.
func (s *Server) ApplyLifecycle(ctx context.Context, now time.Time) (int, error) {
	d := s.dialect
	d.mu.Lock()
	cfgs := map[string][]byte{}
	for b, body := range d.lifecycle {
		cfgs[b] = body
	}
	d.mu.Unlock()
	deleted := 0
	for bucket, body := range cfgs {
		var lc lifecycleConfiguration
		if err := xml.Unmarshal(body, &lc); err != nil {
			return deleted, fmt.Errorf("objstore: the lifecycle of %s does not decode: %w", bucket, err)
		}
		byKey, err := d.versions(ctx, bucket)
		if err != nil {
			return deleted, err
		}
		for key, vs := range byKey {
			n, err := d.expire(ctx, bucket, key, vs, lc.Rules, now)
			deleted += n
			if err != nil {
				return deleted, err
			}
		}
	}
	return deleted, nil
}

// versions lists every version and delete marker of bucket, by key, newest first.
func (d *dialect) versions(ctx context.Context, bucket string) (map[string][]version, error) {
	out := map[string][]version{}
	in := &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)}
	for {
		page, err := d.admin.ListObjectVersions(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("objstore: list the versions of %s: %w", bucket, err)
		}
		for _, v := range page.Versions {
			out[aws.ToString(v.Key)] = append(out[aws.ToString(v.Key)], version{key: aws.ToString(v.Key), id: aws.ToString(v.VersionId), modified: aws.ToTime(v.LastModified)})
		}
		for _, m := range page.DeleteMarkers {
			out[aws.ToString(m.Key)] = append(out[aws.ToString(m.Key)], version{key: aws.ToString(m.Key), id: aws.ToString(m.VersionId), marker: true, modified: aws.ToTime(m.LastModified)})
		}
		if !aws.ToBool(page.IsTruncated) {
			break
		}
		in.KeyMarker, in.VersionIdMarker = page.NextKeyMarker, page.NextVersionIdMarker
	}
	for k := range out {
		vs := out[k]
		sort.SliceStable(vs, func(i, j int) bool { return vs[i].modified.After(vs[j].modified) })
	}
	return out, nil
}

// expire applies rules to one key's versions (newest first) and returns how many it deleted.
func (d *dialect) expire(ctx context.Context, bucket, key string, vs []version, rules []lifecycleRule, now time.Time) (int, error) {
	deleted := 0
	left := vs
	for _, rule := range rules {
		prefix := rule.Filter.Prefix
		if prefix == "" {
			prefix = rule.Prefix
		}
		if rule.Status != "Enabled" || !strings.HasPrefix(key, prefix) {
			continue
		}
		if nc := rule.NoncurrentVersionExpiration; nc != nil && nc.NoncurrentDays > 0 {
			keep := left[:1:1]
			for i := 1; i < len(left); i++ {
				// Noncurrent since its successor (the newer version) was written.
				if left[i-1].modified.Add(time.Duration(nc.NoncurrentDays) * 24 * time.Hour).After(now) {
					keep = append(keep, left[i])
					continue
				}
				if err := d.deleteVersion(ctx, bucket, left[i]); err != nil {
					return deleted, err
				}
				deleted++
			}
			left = keep
		}
		exp := rule.Expiration
		if exp != nil && exp.ExpiredObjectDeleteMarker != nil && *exp.ExpiredObjectDeleteMarker && d.opts.DeleteMarkers == DeleteMarkersExpired &&
			len(left) == 1 && left[0].marker {
			if err := d.deleteVersion(ctx, bucket, left[0]); err != nil {
				return deleted, err
			}
			deleted++
			left = nil
		}
		if len(left) == 0 {
			break
		}
	}
	return deleted, nil
}

func (d *dialect) deleteVersion(ctx context.Context, bucket string, v version) error {
	if _, err := d.admin.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(v.key), VersionId: aws.String(v.id)}); err != nil {
		return fmt.Errorf("objstore: expire version %s of %s/%s: %w", v.id, bucket, v.key, err)
	}
	return nil
}
