package wiring

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"
)

// POC_RECORD_DIR puts the recorder under the Scaleway client's retries and under the S3 client's
// signer: one cassette per service, each exchange as the API saw it, its key or signature removed.
func TestClientsRecordUnderPOCRecordDir(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/instance/v1/zones/fr-par-1/servers" {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"servers":[],"total_count":0}`)
			return
		}
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>no</Message></Error>`)
	}))
	defer srv.Close()
	dir := t.TempDir()
	const access, secret = "SCWXXXXXXXXXXXXXXXXX", "11111111-2222-4333-8444-999999999999"
	env := map[string]string{"SCW_ACCESS_KEY": access, "SCW_SECRET_KEY": secret, "SCW_API_URL": srv.URL,
		"SCW_DEFAULT_PROJECT_ID": "11111111-2222-4333-8444-555555555555", "POC_RECORD_DIR": dir}
	getenv := func(k string) string { return env[k] }
	c, err := ScalewayClient(getenv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := instance.NewAPI(c).ListServers(&instance.ListServersRequest{Zone: scw.ZoneFrPar1}, scw.WithContext(t.Context())); err != nil {
		t.Fatal(err)
	}
	b, err := OpenS3(t.Context(), "s3://state?region=fr-par&use_path_style=true&endpoint="+srv.URL, getenv)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.ReadAll(t.Context(), "clusters/x.json"); err == nil {
		t.Fatal("read a missing object")
	}
	for _, svc := range []string{"scaleway", "s3"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*."+svc+".cassette.yaml"))
		if len(files) != 1 {
			t.Fatalf("%s cassettes: %v", svc, files)
		}
		raw, _ := os.ReadFile(files[0])
		for _, s := range []string{secret, access} {
			if bytes.Contains(raw, []byte(s)) {
				t.Errorf("the %s cassette holds a key:\n%s", svc, raw)
			}
		}
		if want := map[string]string{"scaleway": `"total_count":0`, "s3": "NoSuchKey"}[svc]; !bytes.Contains(raw, []byte(want)) {
			t.Errorf("the %s cassette lacks the answer %q:\n%s", svc, want, raw)
		}
	}
}
