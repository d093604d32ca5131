package images

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	"gocloud.dev/gcerrors"

	"github.com/pocbot/pocbot/internal/sim/imagefactory"
	"github.com/pocbot/pocbot/internal/sim/objstore/objstoretest"
)

const ver = "v1.13.11"

func TestSchematic(t *testing.T) {
	t.Parallel()
	f := startFactory(t, imagefactory.Options{})
	for _, tc := range []struct {
		name string
		ext  []string
		id   string
	}{
		{"none", nil, imagefactory.EmptySchematicID},
		{"empty slice", []string{}, imagefactory.EmptySchematicID},
		{"qemu agent", []string{"siderolabs/qemu-guest-agent"}, "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"},
		{"duplicates collapse", []string{"siderolabs/qemu-guest-agent", "siderolabs/qemu-guest-agent"}, "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"},
		{"two", []string{"siderolabs/gvisor", "siderolabs/amd-ucode"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, id := Schematic(tc.ext)
			if tc.id != "" && id != tc.id {
				t.Fatalf("id %s, want %s\n%s", id, tc.id, doc)
			}
			// The factory must answer the same id for the same document.
			resp, err := http.Post(f.URL()+"/schematics", "application/yaml", bytes.NewReader(doc))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var out struct{ ID string }
			_ = json.NewDecoder(resp.Body).Decode(&out)
			if out.ID != id {
				t.Fatalf("factory says %s, local %s", out.ID, id)
			}
		})
	}
	_, a := Schematic([]string{"siderolabs/gvisor", "siderolabs/amd-ucode"})
	_, b := Schematic([]string{"siderolabs/amd-ucode", "siderolabs/gvisor"})
	if a != b {
		t.Fatal("extension order changes the schematic id")
	}
	if err := ValidateExtensions([]string{"siderolabs/gvisor", "Bad Name"}); err == nil {
		t.Fatal("invalid extension name accepted")
	}
}

func TestURLs(t *testing.T) {
	id := imagefactory.EmptySchematicID
	for _, tc := range []struct{ got, want string }{
		{ScalewayQCOW2URL("https://factory.talos.dev/", id, ver), "https://factory.talos.dev/image/" + id + "/v1.13.11/scaleway-amd64.qcow2"},
		{MetalRawZstURL("http://127.0.0.1:8080", id, ver), "http://127.0.0.1:8080/image/" + id + "/v1.13.11/metal-amd64.raw.zst"},
		{MetalRawXZURL("http://127.0.0.1:8080/", id, ver), "http://127.0.0.1:8080/image/" + id + "/v1.13.11/metal-amd64.raw.xz"},
		{InstallerImage("https://factory.talos.dev", "metal", id, ver), "factory.talos.dev/metal-installer/" + id + ":v1.13.11"},
		{InstallerImage("http://127.0.0.1:8080", "scaleway", id, ver), "127.0.0.1:8080/scaleway-installer/" + id + ":v1.13.11"},
		{ObjectKey(id, ver), "talos/" + id + "/v1.13.11/scaleway-amd64.qcow2"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %s, want %s", tc.got, tc.want)
		}
	}
	t.Setenv(FactoryURLEnv, "http://127.0.0.1:9/")
	if got := FactoryBaseURL(os.Getenv); got != "http://127.0.0.1:9" {
		t.Errorf("FactoryBaseURL from env = %s", got)
	}
	t.Setenv(FactoryURLEnv, "")
	if got := FactoryBaseURL(os.Getenv); got != DefaultFactoryURL {
		t.Errorf("default FactoryBaseURL = %s", got)
	}
}

func startFactory(t testing.TB, opts imagefactory.Options) *imagefactory.Factory {
	t.Helper()
	f, err := imagefactory.Start(t.Context(), "127.0.0.1:0", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

func fileBucket(t testing.TB) *blob.Bucket {
	t.Helper()
	b, err := fileblob.OpenBucket(t.TempDir(), &fileblob.Options{Metadata: fileblob.MetadataInSidecar})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func artifactSHA(t testing.TB, f *imagefactory.Factory, id string) string {
	t.Helper()
	r, err := f.Artifact(id, ver, imagefactory.ScalewayQCOW2)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// bucketCase runs the same chain checks against every bucket kind.
type bucketCase struct {
	name string
	open func(t *testing.T) *blob.Bucket
	// uploads lists unfinished multipart uploads (S3 only).
	uploads func(t *testing.T) int
}

func bucketCases() []bucketCase {
	return []bucketCase{
		{name: "fileblob", open: func(t *testing.T) *blob.Bucket { return fileBucket(t) }},
		{name: "versitygw-s3", open: nil}, // filled in TestEnsureObject
	}
}

func TestEnsureObject(t *testing.T) {
	t.Parallel()
	const size = 20<<20 + 123
	cases := bucketCases()
	var s3client *s3.Client
	cases[1].open = func(t *testing.T) *blob.Bucket {
		s := objstoretest.Versity(t)
		name := objstoretest.Bucket(t, s, "images")
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		b, err := s.OpenBucket(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		s3client = s.Client()
		return b
	}
	cases[1].uploads = func(t *testing.T) int {
		out, err := s3client.ListMultipartUploads(t.Context(), &s3.ListMultipartUploadsInput{Bucket: aws.String("images")})
		if err != nil {
			t.Fatalf("list multipart uploads: %v", err)
		}
		return len(out.Uploads)
	}
	for _, bc := range cases {
		t.Run(bc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
			defer cancel()
			f := startFactory(t, imagefactory.Options{QCOW2Size: size})
			bucket := bc.open(t)
			doc, id := Schematic([]string{"siderolabs/gvisor"})
			src := Source{SchematicYAML: doc, SchematicID: id, Version: ver}
			key := ObjectKey(id, ver)
			// Small parts so that S3 sees a real multipart upload.
			opts := Options{PartSize: 5 << 20}

			// A stream cut half way stores nothing.
			f.CutAfter(7 << 20)
			if _, _, err := EnsureObject(ctx, f.URL(), bucket, key, src, opts); err == nil {
				t.Fatal("cut stream reported success")
			}
			f.CutAfter(0)
			for _, k := range []string{key, key + ManifestSuffix} {
				if _, err := bucket.Attributes(ctx, k); gcerrors.Code(err) != gcerrors.NotFound {
					t.Fatalf("after a failed stream %s exists (err %v)", k, err)
				}
			}
			if bc.uploads != nil {
				if n := bc.uploads(t); n != 0 {
					t.Fatalf("%d multipart uploads left open after a failed stream", n)
				}
			}

			// First cluster: downloads once.
			before := f.BytesServed()
			obj, downloaded, err := EnsureObject(ctx, f.URL(), bucket, key, src, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !downloaded || obj.Size != size || obj.SHA256 != artifactSHA(t, f, id) || f.BytesServed()-before != size {
				t.Fatalf("first ensure: downloaded=%v size=%d sha=%s served=%d", downloaded, obj.Size, obj.SHA256, f.BytesServed()-before)
			}
			attrs, err := bucket.Attributes(ctx, key)
			if err != nil || attrs.Size != size || attrs.Metadata[MetaShared] != "true" || attrs.Metadata[MetaSchematic] != id {
				t.Fatalf("stored object attrs %+v err %v", attrs, err)
			}
			r, err := bucket.NewReader(ctx, key, nil)
			if err != nil {
				t.Fatal(err)
			}
			h := sha256.New()
			_, _ = io.Copy(h, r)
			r.Close()
			if hex.EncodeToString(h.Sum(nil)) != obj.SHA256 {
				t.Fatal("bytes in the bucket differ from the recorded sha256")
			}

			// Second cluster: 0 bytes.
			before = f.BytesServed()
			obj2, downloaded, err := EnsureObject(ctx, f.URL(), bucket, key, src, opts)
			if err != nil || downloaded || obj2.SHA256 != obj.SHA256 || f.BytesServed() != before {
				t.Fatalf("second ensure: downloaded=%v err=%v served %d bytes", downloaded, err, f.BytesServed()-before)
			}
			list, err := List(ctx, bucket, "talos/")
			if err != nil || len(list) != 1 || list[0].Key != key {
				t.Fatalf("List = %+v, %v", list, err)
			}

			// A missing manifest (crash after the upload) means refetch.
			if err := bucket.Delete(ctx, key+ManifestSuffix); err != nil {
				t.Fatal(err)
			}
			if _, downloaded, err = EnsureObject(ctx, f.URL(), bucket, key, src, opts); err != nil || !downloaded {
				t.Fatalf("object without manifest reused: downloaded=%v err=%v", downloaded, err)
			}
			// Forced refresh downloads again.
			if _, downloaded, err = EnsureObject(ctx, f.URL(), bucket, key, src, Options{Force: true}); err != nil || !downloaded {
				t.Fatalf("force: downloaded=%v err=%v", downloaded, err)
			}
			if err := Delete(ctx, bucket, key); err != nil {
				t.Fatal(err)
			}
			if list, _ := List(ctx, bucket, "talos/"); len(list) != 0 {
				t.Fatalf("after Delete, List = %+v", list)
			}
		})
	}
}

func TestEnsureObjectRefusals(t *testing.T) {
	t.Parallel()
	notQCOW2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/schematics" {
			w.WriteHeader(201)
			_, _ = io.WriteString(w, `{"id":"`+imagefactory.EmptySchematicID+`"}`)
			return
		}
		_, _ = io.WriteString(w, "<html>maintenance</html>")
	}))
	t.Cleanup(notQCOW2.Close)
	f := startFactory(t, imagefactory.Options{QCOW2Size: 1 << 20})
	doc, id := Schematic(nil)
	for _, tc := range []struct {
		name, base string
		src        Source
		wantErr    string
	}{
		{"not qcow2", notQCOW2.URL, Source{SchematicYAML: doc, SchematicID: id, Version: ver}, "not a QCOW2"},
		{"unknown schematic", f.URL(), Source{SchematicID: strings.Repeat("ab", 32), Version: ver}, "HTTP 404"},
		{"id mismatch", f.URL(), Source{SchematicYAML: doc, SchematicID: strings.Repeat("ab", 32), Version: ver}, "expected"},
		{"no version", f.URL(), Source{SchematicID: id}, "required"},
		{"factory down", "http://127.0.0.1:1", Source{SchematicYAML: doc, SchematicID: id, Version: ver}, "post schematic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			bucket := fileBucket(t)
			key := ObjectKey(tc.src.SchematicID, ver)
			_, _, err := EnsureObject(ctx, tc.base, bucket, key, tc.src, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.wantErr)
			}
			if ok, _ := bucket.Exists(ctx, key); ok {
				t.Fatal("an object was stored despite the error")
			}
		})
	}
}

// peakHeap samples HeapInuse until stop is called and returns the maximum.
func peakHeap() (stop func() uint64) {
	var mu sync.Mutex
	var peak uint64
	done := make(chan struct{})
	finished := make(chan struct{})
	sample := func() {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		mu.Lock()
		peak = max(peak, m.HeapInuse)
		mu.Unlock()
	}
	go func() {
		defer close(finished)
		tk := time.NewTicker(5 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-tk.C:
				sample()
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-finished
		sample()
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// streamAndMeasure streams a size-byte image into bucket and returns the
// peak heap in use and the duration.
func streamAndMeasure(tb testing.TB, bucket *blob.Bucket, size int64) (uint64, time.Duration) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), 5*time.Minute)
	defer cancel()
	f := startFactory(tb, imagefactory.Options{QCOW2Size: size})
	doc, id := Schematic(nil)
	runtime.GC()
	stop := peakHeap()
	start := time.Now()
	obj, _, err := EnsureObject(ctx, f.URL(), bucket, ObjectKey(id, ver), Source{SchematicYAML: doc, SchematicID: id, Version: ver}, Options{Force: true})
	el := time.Since(start)
	peak := stop()
	if err != nil {
		tb.Fatal(err)
	}
	if obj.Size != size || f.BytesServed() != size {
		tb.Fatalf("stored %d bytes, served %d, want %d", obj.Size, f.BytesServed(), size)
	}
	return peak, el
}

// TestStreamImageMemory streams a 256 MiB image (POC_IMAGE_STREAM_BYTES
// overrides; the 1 GiB figure comes from BenchmarkStreamImage, which is too
// slow under -race for the test budget) into a file-backed bucket and checks
// the peak heap stays under 64 MiB.
//
// Not parallel: the heap measured is the process's, and the package's other tests run in
// parallel once the serial ones are done.
func TestStreamImageMemory(t *testing.T) {
	size := int64(256 << 20)
	if testing.Short() {
		size = 64 << 20
	}
	if v := os.Getenv("POC_IMAGE_STREAM_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("POC_IMAGE_STREAM_BYTES: %v", err)
		}
		size = n
	}
	peak, el := streamAndMeasure(t, fileBucket(t), size)
	t.Logf("streamed %d MiB in %v (%.0f MiB/s); peak heap in use %.1f MiB", size>>20, el.Round(time.Millisecond), float64(size)/(1<<20)/el.Seconds(), float64(peak)/(1<<20))
	if peak > 64<<20 {
		t.Fatalf("peak heap %d MiB exceeds 64 MiB", peak>>20)
	}
}

// BenchmarkStreamImage streams a 1 GiB image from the factory stand-in into
// a file-backed bucket and into versitygw (real S3 multipart upload), and
// reports the peak heap in use. Run:
//
//	go test -run '^$' -bench StreamImage -benchtime 1x ./internal/provision/images/
func BenchmarkStreamImage(b *testing.B) {
	const size = 1 << 30
	for _, bc := range []struct {
		name string
		open func(b *testing.B) *blob.Bucket
	}{
		{"fileblob", func(b *testing.B) *blob.Bucket { return fileBucket(b) }},
		{"versitygw-s3", func(b *testing.B) *blob.Bucket {
			s := objstoretest.Versity(b)
			name := objstoretest.Bucket(b, s, "bench")
			bk, err := s.OpenBucket(b.Context(), name)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = bk.Close() })
			return bk
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			bucket := bc.open(b)
			var peak uint64
			var el time.Duration
			for b.Loop() {
				p, d := streamAndMeasure(b, bucket, size)
				peak, el = max(peak, p), el+d
			}
			b.SetBytes(size)
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			if peak > 64<<20 {
				b.Errorf("peak heap %d MiB exceeds 64 MiB", peak>>20)
			}
		})
	}
}
