// Package cnichart is pocbot's own test chart in place of Cilium's (which the project may not
// ship): a CNI chart that takes the values the bot sets on Cilium's chart and renders the
// objects the Talos stand-in reads (the cilium-config ConfigMap, the cilium and cilium-envoy
// DaemonSets, the cilium-operator Deployment), with templates written for this project. The
// world serves it as the pinned chart; the chart renderer's tests render it.
package cnichart

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"path"
	"sort"
	"sync"
)

//go:embed all:chart
var files embed.FS

// Name is the chart's directory inside its archive.
const Name = "pocbot-test-cni"

// Archive is the chart as a .tgz, built the same way every time (sorted entries, zero times).
var Archive = sync.OnceValue(func() []byte {
	var names []string

	_ = fs.WalkDir(files, "chart", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, p)
		}

		return err
	})
	sort.Strings(names)

	var buf bytes.Buffer

	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)

	for _, n := range names {
		b, err := files.ReadFile(n)
		if err != nil {
			panic(err) // embedded: cannot fail
		}

		rel := path.Join(Name, n[len("chart/"):])
		if err := tw.WriteHeader(&tar.Header{Name: rel, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			panic(err)
		}

		_, _ = tw.Write(b)
	}

	_ = tw.Close()
	_ = gz.Close()

	return buf.Bytes()
})

// SHA256 is the archive's digest, hex.
func SHA256() string {
	s := sha256.Sum256(Archive())

	return hex.EncodeToString(s[:])
}
