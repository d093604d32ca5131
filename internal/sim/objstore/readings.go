package objstore

import (
	"slices"

	"github.com/pocbot/pocbot/internal/assume"
)

// PutPrecondition is how the stand-in answers a conditional PutObject that loses (register row
// put-precondition). The zero value is the default, 412.
type PutPrecondition int

const (
	// PutPrecondition412: 412 Precondition Failed, no error body.
	PutPrecondition412 PutPrecondition = iota
	// PutPrecondition409: 409 Conflict.
	PutPrecondition409
	// PutPreconditionIgnored: the condition is ignored and the object written (a backend without
	// conditional writes: the bot must refuse it).
	PutPreconditionIgnored
)

// DeleteMarkers is what the stand-in does with a lifecycle rule's ExpiredObjectDeleteMarker
// (register row delete-markers). The zero value is the default, expired.
type DeleteMarkers int

const (
	// DeleteMarkersExpired: accepted, and ApplyLifecycle removes a delete marker left alone.
	DeleteMarkersExpired DeleteMarkers = iota
	// DeleteMarkersKept: accepted, but delete markers stay.
	DeleteMarkersKept
	// DeleteMarkersRefused: a lifecycle configuration carrying it is refused, 400 MalformedXML.
	DeleteMarkersRefused
)

// PresignScope is what a key whose IAM grants objects read (ObjectStorageObjectsRead) reaches
// under the bucket policy of docs/install.md (register row presign-scope). The zero value is the
// default, narrowed.
type PresignScope int

const (
	// PresignNarrowed: IAM and the bucket policy both apply: GET and HEAD under public/ only.
	PresignNarrowed PresignScope = iota
	// PresignWide: the bucket policy does not narrow the key: every object.
	PresignWide
	// PresignRefused: no object, public/ included.
	PresignRefused
)

// WithReadings is o with the Object Storage rows that rs names (the others keep o's choice):
// delete-conditions, put-precondition, delete-markers, presign-scope. Each type's constants
// follow its row's readings, in the register's order (TestReadingsFollowTheRegister).
func (o Options) WithReadings(rs assume.Readings) Options {
	pick := func(id string) (int, bool) {
		v, ok := rs[id]
		if !ok {
			return 0, false
		}
		i := slices.Index(assume.MustLookup(id).Values(), v)
		return i, i >= 0
	}
	if i, ok := pick(assume.DeleteConditions); ok {
		o.DeleteConditions = DeleteConditions(i)
	}
	if i, ok := pick(assume.PutPrecondition); ok {
		o.PutPrecondition = PutPrecondition(i)
	}
	if i, ok := pick(assume.DeleteMarkers); ok {
		o.DeleteMarkers = DeleteMarkers(i)
	}
	if i, ok := pick(assume.PresignScope); ok {
		o.PresignScope = PresignScope(i)
	}
	return o
}
