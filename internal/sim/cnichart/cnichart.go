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
	contents := map[string]string{}

	_ = fs.WalkDir(files, "chart", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, err := files.ReadFile(p)
			if err != nil {
				panic(err) // embedded: cannot fail
			}

			contents[p[len("chart/"):]] = string(b)
		}

		return err
	})

	return Pack(Name, contents)
})

// Pack is a chart archive of files (path in the chart → text) under the directory name, as
// Archive is built: for the tests' charts of their own (a broken one, a large one).
func Pack(name string, files map[string]string) []byte {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}

	sort.Strings(names)

	var buf bytes.Buffer

	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)

	for _, n := range names {
		b := files[n]
		if err := tw.WriteHeader(&tar.Header{Name: path.Join(name, n), Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			panic(err) // a header of a regular file in memory: cannot fail
		}

		_, _ = tw.Write([]byte(b))
	}

	_ = tw.Close()
	_ = gz.Close()

	return buf.Bytes()
}

// SHA256 is the archive's digest, hex.
func SHA256() string {
	s := sha256.Sum256(Archive())

	return hex.EncodeToString(s[:])
}
