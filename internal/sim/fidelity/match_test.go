package fidelity

import (
	"reflect"
	"strings"
	"testing"

	"github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"
	"gopkg.in/dnaeon/go-vcr.v4/pkg/cassette"

	"github.com/pocbot/pocbot/internal/record"
)

// Compare's definition of a match, case by case.
func TestCompare(t *testing.T) {
	t.Parallel()
	server := reflect.TypeFor[instance.GetServerResponse]()
	const real = `{"server":{"id":"a","state":"running","tags":["x"],"volumes":{"0":{"id":"v","boot":false}},"image":null,"public_ips":[{"id":"i","address":"51.15.0.1"}],"unknown_to_sdk":1}}`
	cases := []struct {
		name      string
		want, got Answer
		typ       reflect.Type
		match     bool
		why       string
	}{
		{"same fields, other values", Answer{200, real},
			Answer{200, `{"server":{"id":"b","state":"starting","tags":[],"volumes":{"0":{"id":"w","boot":true}},"image":null,"public_ips":[{"id":"j","address":"127.0.0.9"}]}}`},
			server, true, ""},
		{"2xx of another code", Answer{201, `{"server":{"id":"a"}}`}, Answer{200, `{"server":{"id":"b"}}`}, server, true, ""},
		{"another class", Answer{200, real}, Answer{500, `{"message":"boom"}`}, server, false, "status 500, recorded 200"},
		{"another 4xx", Answer{404, `{"message":"not found"}`}, Answer{409, `{"message":"conflict"}`}, nil, false, "status 409, recorded 404"},
		{"a field the stand-in lacks", Answer{200, real},
			Answer{200, `{"server":{"id":"b","state":"running","tags":["x"],"volumes":{"0":{"id":"w","boot":false}},"image":null,"public_ips":[{"id":"j"}]}}`},
			server, false, "missing [.server.public_ips[].address]"},
		{"a field the stand-in invents", Answer{200, `{"server":{"id":"a"}}`}, Answer{200, `{"server":{"id":"a","name":"n"}}`}, server, false, "extra [.server.name]"},
		{"a key the SDK does not read is not held", Answer{200, real},
			Answer{200, `{"server":{"id":"b","state":"running","tags":["x"],"volumes":{"0":{"id":"w","boot":false}},"image":null,"public_ips":[{"id":"j","address":"127.0.0.1"}]}}`},
			server, true, ""},
		{"null on one side is not descended into", Answer{200, `{"server":{"image":null}}`}, Answer{200, `{"server":{"image":{"id":"x","name":"n"}}}`}, server, true, ""},
		{"a present field answered absent", Answer{200, `{"server":{"image":null}}`}, Answer{200, `{"server":{}}`}, server, false, "missing [.server.image]"},
		{"does not decode as the SDK type", Answer{200, `{"server":{"id":"a"}}`}, Answer{200, `{"server":{"id":7}}`}, server, false, "does not decode as instance.GetServerResponse"},
		{"not JSON", Answer{200, `{"server":{}}`}, Answer{200, `<html>`}, server, false, "not JSON"},
		{"empty answers empty", Answer{204, ""}, Answer{204, ""}, nil, true, ""},
		{"empty answered with a body", Answer{204, ""}, Answer{200, `{"x":1}`}, nil, false, "body"},
		{"elided bytes answer any bytes", Answer{200, record.ElidedPrefix + "12 bytes, zstd data>"}, Answer{200, "whatever"}, nil, true, ""},
		{"S3 listing, same elements", Answer{200, `<?xml version="1.0"?><ListBucketResult><Name>a</Name><Contents><Key>k</Key><ETag>"e"</ETag></Contents></ListBucketResult>`},
			Answer{200, `<ListBucketResult><Name>b</Name><Contents><Key>x</Key><ETag>"f"</ETag></Contents><Contents><Key>y</Key><ETag>"g"</ETag></Contents></ListBucketResult>`}, nil, true, ""},
		{"S3 listing, an element lacking", Answer{200, `<ListBucketResult><Name>a</Name><KeyCount>1</KeyCount></ListBucketResult>`},
			Answer{200, `<ListBucketResult><Name>b</Name></ListBucketResult>`}, nil, false, "missing [ListBucketResult.KeyCount]"},
		{"S3 error, another code", Answer{412, `<Error><Code>PreconditionFailed</Code></Error>`}, Answer{412, `<Error><Code>ConditionalRequestConflict</Code></Error>`}, nil, false, "error ConditionalRequestConflict, recorded PreconditionFailed"},
		{"S3 other document", Answer{200, `<ListBucketResult></ListBucketResult>`}, Answer{200, `<ListVersionsResult></ListVersionsResult>`}, nil, false, "document <ListVersionsResult>"},
		{"an error read as the SDK's", Answer{404, `{"message":"resource is not found","type":"not_found","resource":"instance_server","resource_id":"a"}`},
			Answer{404, `{"message":"Not Found"}`}, reflect.TypeFor[scw.ResponseError](), false, "missing [.resource .resource_id .type]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Compare(c.want, c.got, c.typ)
			if v.Match() != c.match || !strings.Contains(v.Why, c.why) {
				t.Errorf("Compare = %q (match %v), want match %v with %q", v.Why, v.Match(), c.match, c.why)
			}
		})
	}
}

// An exchange whose path names a redacted value (doctor's read of its own API key) cannot be
// asked of the stand-in: it is not replayed, and says why, rather than counted as a mismatch.
func TestReplaySkipsARedactedPath(t *testing.T) {
	t.Parallel()
	x := Exchange{File: "doctor-20261205T034749.442Z-1.scaleway.cassette.yaml", Service: record.Scaleway, Interaction: &cassette.Interaction{
		Request:  cassette.Request{Method: "GET", URL: "https://api.scaleway.com/iam/v1alpha1/api-keys/" + record.Redacted},
		Response: cassette.Response{Code: 403, Body: `{"message":"insufficient permissions","type":"permissions_denied"}`},
	}}
	rep, err := Replay(t.Context(), []Exchange{x}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Results[0]; got.Skipped != skipRedacted {
		t.Errorf("replayed %q: got %d, verdict %+v", x.Request.URL, got.Got.Code, got.Verdict)
	}
}

// A call the recorded key was refused for want of a permission (the doctor's probes read what the
// bot's key may not) is answered to the replay's owner key: it is not replayed, and says why. A
// 403 of another kind is still compared.
func TestReplaySkipsAPermissionTheRecordedKeyLacked(t *testing.T) {
	t.Parallel()
	denied := `{"message":"insufficient permissions","type":"permissions_denied","details":[{"resource":"applications","action":"read"}]}`
	ex := []Exchange{
		{File: "doctor-20261205T040807.156Z-1.scaleway.cassette.yaml", Service: record.Scaleway, Interaction: &cassette.Interaction{
			Request:  cassette.Request{Method: "GET", URL: "https://api.scaleway.com/iam/v1alpha1/applications?name=pocbot-p"},
			Response: cassette.Response{Code: 403, Body: denied}}},
		{File: "doctor-20261205T040807.156Z-1.scaleway.cassette.yaml", Service: record.Scaleway, Interaction: &cassette.Interaction{
			Request:  cassette.Request{Method: "GET", URL: "https://api.scaleway.com/iam/v1alpha1/applications?name=pocbot-p"},
			Response: cassette.Response{Code: 403, Body: `{"message":"forbidden"}`}}},
	}
	rep, err := Replay(t.Context(), ex, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Results[0]; got.Skipped != skipDenied {
		t.Errorf("the refused permission: skipped %q, got %d, verdict %+v", got.Skipped, got.Got.Code, got.Verdict)
	}
	if got := rep.Results[1]; got.Skipped != "" || got.Verdict.Match() {
		t.Errorf("a 403 of another kind: skipped %q, verdict %+v; want a mismatch", got.Skipped, got.Verdict)
	}
}
