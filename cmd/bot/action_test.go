package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/testenv"
)

const testRelease = "v0.0.0-test"

// archiveExt is .goreleaser.yaml's archive format, which fetch-bot.sh unpacks (action/action_test.go
// checks that the two agree).
const archiveExt = ".tar.zst"

// archiveFile is one member of a test archive: a file, or a symlink to link.
type archiveFile struct {
	name string
	mode int64
	data []byte
	link string
}

// tarZst is a goreleaser-like archive of files: a tar compressed by the zstd program at its default
// level (goreleaser's tar.zst is klauspost/compress's default level, the same zstd format).
func tarZst(t testing.TB, files ...archiveFile) []byte {
	t.Helper()
	var tarball bytes.Buffer
	tw := tar.NewWriter(&tarball)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: time.Unix(0, 0)}
		if f.link != "" {
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, f.link, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	zstd := exec.Command("zstd", "-q", "-c")
	zstd.Stdin = &tarball
	out, err := zstd.Output()
	if err != nil {
		t.Fatalf("zstd (fetch-bot.sh needs it too; .ci/run installs it): %v", err)
	}
	return out
}

// needTools skips (fails under CI) when a program the Action's script runs is missing.
func needTools(t testing.TB, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		testenv.Program(t, tool, "apt-get install "+tool)
	}
}

// toolsDir is a directory holding only the named programs (links to those on PATH), for a PATH that
// lacks the others. A missing one skips, or fails under CI, as needTools does.
func toolsDir(t testing.TB, tools ...string) string {
	t.Helper()
	needTools(t, tools...)
	dir := t.TempDir()
	for _, tool := range tools {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(dir, tool)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// release lays out a GitHub-release-like tree under root: root/<tag>/checksums.txt and the
// goreleaser archive (pocbot_<ver>_<os>_<arch>.tar.zst, holding `bot`) for this machine; the same
// sums go to pinnedSums(root), the Action's action/checksums.txt that the release commits.
func release(t testing.TB, root, bin string) (archivePath string) {
	t.Helper()
	dir := filepath.Join(root, testRelease)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	data := tarZst(t, archiveFile{name: "README.md", mode: 0o644, data: []byte("pocbot\n")}, archiveFile{name: "bot", mode: 0o755, data: exe})
	name := fmt.Sprintf("pocbot_%s_%s_%s%s", strings.TrimPrefix(testRelease, "v"), runtime.GOOS, runtime.GOARCH, archiveExt)
	sum := sha256.Sum256(data)
	checksums := fmt.Sprintf("%s  %s\n%s  pocbot_%s_other_arch%s\n", hex.EncodeToString(sum[:]), name, strings.Repeat("0", 64), strings.TrimPrefix(testRelease, "v"), archiveExt)
	if err := os.WriteFile(filepath.Join(dir, "checksums.txt"), []byte(checksums), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pinnedSums(root), []byte(checksums), 0o644); err != nil {
		t.Fatal(err)
	}
	archivePath = filepath.Join(dir, name)
	if err := os.WriteFile(archivePath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return archivePath
}

// sha256Program is the sha256 program fetch-bot.sh falls back to here: coreutils' sha256sum, or
// Perl's shasum where there is none (macOS).
func sha256Program() string {
	if _, err := exec.LookPath("sha256sum"); err != nil {
		return "shasum"
	}
	return "sha256sum"
}

// pinnedSums is where release puts the Action's own copy of the sums (outside the served tree).
func pinnedSums(root string) string { return filepath.Join(root, "action-checksums.txt") }

func runnerOSArch() (string, string) {
	os, arch := map[string]string{"linux": "Linux", "darwin": "macOS"}[runtime.GOOS], map[string]string{"amd64": "X64", "arm64": "ARM64"}[runtime.GOARCH]
	return os, arch
}

// fetchBotScript is the Action's download script, relative to this package.
const fetchBotScript = "../../action/fetch-bot.sh"

// fetchBotCmd is action/fetch-bot.sh as the Action runs it, with the pinned sums at sums.
func fetchBotCmd(ctx context.Context, releaseURL, sums, dir string, extra ...string) *exec.Cmd {
	ros, rarch := runnerOSArch()
	cmd := exec.CommandContext(ctx, "bash", fetchBotScript)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "POCBOT_VERSION=" + testRelease, "POCBOT_RELEASE_URL=" + releaseURL,
		"POCBOT_CHECKSUMS=" + sums, "POCBOT_DIR=" + dir, "RUNNER_OS=" + ros, "RUNNER_ARCH=" + rarch}, extra...)
	return cmd
}

// fetchBot runs fetchBotCmd.
func fetchBot(ctx context.Context, t testing.TB, releaseURL, sums, dir string, extra ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := fetchBotCmd(ctx, releaseURL, sums, dir, extra...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run fetch-bot.sh: %v", err)
	}
	return so.String(), se.String(), code
}

// The Action's download path: a good archive runs; a tampered, unlisted or poisoned-cache archive is
// refused with a clear error and leaves no binary behind. Only the sums the Action's commit holds
// count: a release or a cache that brings its own matching checksums.txt is refused all the same
// (the "poisoned cache" and "replaced release" cases ran the planted archive with the script that
// read checksums.txt from the download or the cache).
func TestActionFetchVerifiesTheRelease(t *testing.T) {
	t.Parallel()
	needTools(t, "curl", "zstd")
	if ros, rarch := runnerOSArch(); ros == "" || rarch == "" {
		t.Skipf("no release is built for %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	// bash reads the script, not this process: opening it here makes go test's cache see an
	// edit of it (a cached pass would otherwise hide one).
	if _, err := os.ReadFile(fetchBotScript); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	archive := release(t, root, buildBot(t))
	// The bound starts after the build: a build on a loaded machine is not the download's time.
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	good, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	sumsPath := filepath.Join(filepath.Dir(archive), "checksums.txt")
	sums, err := os.ReadFile(sumsPath)
	if err != nil {
		t.Fatal(err)
	}
	pinned := pinnedSums(root)
	// other is a well-formed archive that the release never had: a bot that announces itself and
	// writes a marker, so that the test sees whether it ran.
	marker := filepath.Join(t.TempDir(), "planted-ran")
	other, otherSums := plantedArchive(t, filepath.Base(archive), marker)
	srv := httptest.NewServer(http.StripPrefix("/download", http.FileServer(http.Dir(root))))
	defer srv.Close()
	url := srv.URL + "/download"

	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, dir string) // before the run: the server's files, or a cached dir
		env     []string
		want    string // in stderr; "" = success
	}{
		{name: "good archive runs"},
		{name: "tampered archive refused", want: "checksum mismatch", prepare: func(t *testing.T, _ string) {
			bad := bytes.Clone(good)
			bad[len(bad)/2] ^= 0xff
			if err := os.WriteFile(archive, bad, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "poisoned cache refused", want: "checksum mismatch for the cached", prepare: func(t *testing.T, dir string) {
			// The Action's cache restored another archive together with a checksums.txt (and a
			// bot) that match it: only the pinned sums count, so it is refused and nothing runs.
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, data := range map[string][]byte{filepath.Base(archive): other, "checksums.txt": otherSums, "bot": []byte("#!/bin/sh\ntouch " + marker + "\n")} {
				if err := os.WriteFile(filepath.Join(dir, name), data, 0o755); err != nil {
					t.Fatal(err)
				}
			}
		}},
		// A cache entry that restored a directory named bot (or checksums.txt) beside the archive:
		// removed like a planted file, and the verified archive runs. The old script stopped at
		// "rm: cannot remove 'bot': Is a directory".
		{name: "a planted bot directory in the cache", prepare: func(t *testing.T, dir string) {
			for _, d := range []string{"bot/x", "checksums.txt"} {
				if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
		}},
		// A directory in the archive's place: refused as a poisoned cache, and removed. The old
		// script stopped at rm's "Is a directory".
		{name: "a directory in the cached archive's place", want: "checksum mismatch for the cached", prepare: func(t *testing.T, dir string) {
			if err := os.MkdirAll(filepath.Join(dir, filepath.Base(archive), "x"), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if _, err := os.Stat(filepath.Join(dir, filepath.Base(archive))); err == nil {
					t.Error("the directory in the archive's place was left")
				}
			})
		}},
		{name: "replaced release refused", want: "checksum mismatch", prepare: func(t *testing.T, _ string) {
			// The release's files were replaced, archive and checksums.txt together.
			if err := os.WriteFile(archive, other, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(sumsPath, otherSums, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "archive not listed in the pinned sums", want: "is not listed in the Action's pinned checksums", prepare: func(t *testing.T, _ string) {
			if err := os.WriteFile(pinned, []byte(strings.Repeat("1", 64)+"  pocbot_other"+archiveExt+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a commit that pins no release", want: "pins no release", prepare: func(t *testing.T, _ string) {
			if err := os.WriteFile(pinned, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "missing release", want: "download", prepare: func(t *testing.T, _ string) {
			if err := os.Remove(archive); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a version the pin does not hold", want: "is not listed in the Action's pinned checksums", env: []string{"POCBOT_VERSION=v9.9.9"}},
		{name: "pinned bytes that are not a tar.zst", want: "unpacking bot from", prepare: func(t *testing.T, _ string) {
			// The pin holds, but the bytes do not unpack (an archive of another format, say):
			// stop with what failed, leave no partial bot.
			junk := []byte("not a zstd frame\n")
			sum := sha256.Sum256(junk)
			if err := os.WriteFile(archive, junk, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(pinned, []byte(hex.EncodeToString(sum[:])+"  "+filepath.Base(archive)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		// Before any download: the runner cannot unpack without zstd, and says how to get it.
		{name: "no zstd on the runner", want: "zstd is not installed", env: []string{"PATH=" + t.TempDir()}},
		// openssl is only the fast way: without it, sha256sum verifies the same archive.
		{name: "no openssl on the runner", env: []string{"PATH=" + toolsDir(t, "curl", "zstd", "tar", "mkdir", "rm", "mv", "chmod", sha256Program())}},
		// Without any sha256 program nothing can be verified: say so, rather than call the archive
		// (or the cache) corrupt. The old script reported "checksum mismatch … the download is ".
		{name: "no sha256 program on the runner", want: "no sha256 program", env: []string{"PATH=" + toolsDir(t, "curl", "zstd", "tar", "mkdir", "rm", "mv", "chmod")}},
		// The pinned archive's bot must be a file: a symlink (a release built wrong) would run, and
		// chmod, whatever it points to. The old script ran the link's target.
		{name: "a bot that is a symlink", want: "is not a regular file", prepare: func(t *testing.T, _ string) {
			target := filepath.Join(t.TempDir(), "elsewhere")
			if err := os.WriteFile(target, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			data := tarZst(t, archiveFile{name: "bot", mode: 0o777, link: target})
			sum := sha256.Sum256(data)
			if err := os.WriteFile(archive, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(pinned, []byte(hex.EncodeToString(sum[:])+"  "+filepath.Base(archive)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		// Likewise a bot directory in the pinned archive: refused with the same words (the old
		// script stopped at rm's "Is a directory").
		{name: "a bot that is a directory", want: "is not a regular file", prepare: func(t *testing.T, _ string) {
			data := tarZst(t, archiveFile{name: "bot/bot", mode: 0o755, data: []byte("#!/bin/sh\ntouch " + marker + "\n")})
			sum := sha256.Sum256(data)
			if err := os.WriteFile(archive, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(pinned, []byte(hex.EncodeToString(sum[:])+"  "+filepath.Base(archive)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "not a tag", want: "is not a release tag", env: []string{"POCBOT_VERSION=latest"}},
		// The version names files in POCBOT_DIR: no path in it. The old script took it (and looked
		// for, then removed, pocbot_1/../../x_….tar.zst).
		{name: "a version with a path", want: "is not a release tag", env: []string{"POCBOT_VERSION=v1/../../x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for p, data := range map[string][]byte{archive: good, sumsPath: sums, pinned: sums} { // the good files on the server, the Action's pin
				if err := os.WriteFile(p, data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			dir := filepath.Join(t.TempDir(), "pocbot")
			if tc.prepare != nil {
				tc.prepare(t, dir)
			}
			os.Remove(marker)
			out, stderr, code := fetchBot(ctx, t, url, pinned, dir, tc.env...)
			bin := filepath.Join(dir, "bot")
			if tc.want != "" {
				if code == 0 || !strings.Contains(stderr, tc.want) {
					t.Fatalf("exit %d, stderr %q: want a failure naming %q", code, stderr, tc.want)
				}
				if _, err := os.Stat(bin); err == nil {
					t.Error("a binary was left behind after a refused download")
				}
				if _, err := os.Stat(marker); err == nil {
					t.Error("the planted bot ran")
				}
				return
			}
			if code != 0 || strings.TrimSpace(out) != bin {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, stderr)
			}
			v, err := exec.CommandContext(ctx, bin, "version").CombinedOutput()
			if err != nil || !strings.HasPrefix(string(v), "pocbot ") {
				t.Fatalf("the fetched bot does not run: %v\n%s", err, v)
			}
			// A second run (the Action's cache hit) verifies the kept archive again and succeeds offline.
			srv.Config.Handler = http.NotFoundHandler()
			defer func() { srv.Config.Handler = http.StripPrefix("/download", http.FileServer(http.Dir(root))) }()
			if _, stderr, code := fetchBot(ctx, t, url, pinned, dir); code != 0 {
				t.Fatalf("cached run: exit %d, %s", code, stderr)
			}
		})
	}
}

// plantedArchive is an archive named like the release's holding a `bot` script that touches
// marker, and a checksums.txt that matches it.
func plantedArchive(t *testing.T, name, marker string) (archive, sums []byte) {
	t.Helper()
	archive = tarZst(t, archiveFile{name: "bot", mode: 0o755, data: []byte("#!/bin/sh\necho planted\ntouch " + marker + "\n")})
	sum := sha256.Sum256(archive)
	return archive, []byte(hex.EncodeToString(sum[:]) + "  " + name + "\n")
}

// BenchmarkArchiveToEyes measures what a comment waits for once the runner is up, with a release
// archive: from "archive URL known" (download, verify, unpack, from loopback) to GitHub accepting
// the process's 👀 on the comment. The source build it replaces is reported next to it: its CPU
// time, measured once with a cold cache (see CHANGELOG.md), is far beyond any loopback figure.
func BenchmarkArchiveToEyes(b *testing.B) {
	root := b.TempDir()
	release(b, root, buildBot(b))
	srv := httptest.NewServer(http.StripPrefix("/download", http.FileServer(http.Dir(root))))
	defer srv.Close()
	ctx, w := startWorld(b, 10*time.Minute, world.Options{})
	const repo = "acme/shop"
	w.GitHub.AddRepo(repo, "main")
	w.GitHub.SetPermission(repo, "bob", "read")
	w.GitHub.AddIssue(repo, ghsim.Issue{Number: 42, Author: "alice"})
	var total, fetch time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dir := filepath.Join(b.TempDir(), "pocbot")
		id := w.GitHub.AddComment(repo, 42, "bob", "/poc up")
		event := filepath.Join(b.TempDir(), "event.json")
		if err := os.WriteFile(event, ghsim.CommentPayload(repo, 42, id, "bob", w.GitHub.UserID("bob"), "/poc up", w.GitHub.InstallationID(repo)), 0o600); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		out, stderr, code := fetchBot(ctx, b, srv.URL+"/download", pinnedSums(root), dir)
		if code != 0 {
			b.Fatalf("fetch: %s", stderr)
		}
		fetch += time.Since(start)
		cmd := exec.CommandContext(ctx, strings.TrimSpace(out), "handle")
		cmd.Env = actionsEnv(w, "issue_comment", event, repo, "1", "POC_REAP_ON_EVENTS=false")
		if res, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("bot handle: %v\n%s", err, res)
		}
		var eyes time.Time
		for _, r := range w.GitHub.Reactions(repo, 42) {
			if r.CommentID == id && r.Content == "eyes" {
				eyes = r.At
			}
		}
		if eyes.IsZero() {
			b.Fatal("no 👀 on the comment")
		}
		total += eyes.Sub(start)
	}
	avg := total / time.Duration(b.N)
	b.ReportMetric(float64(avg.Milliseconds()), "ms-archive-to-eyes")
	b.ReportMetric(float64((fetch / time.Duration(b.N)).Milliseconds()), "ms-download-verify-unpack")
	b.ReportMetric(avg.Seconds()/5, "ratio-to-5s-goal")
	b.ReportMetric(sourceBuildCPUSeconds/avg.Seconds(), "x-faster-than-source-build-cpu")
}

// sourceBuildCPUSeconds is the CPU time of a cold `go build ./cmd/bot` (empty GOCACHE, modules
// already in the module cache), measured once with /usr/bin/time -v on the 2-core development
// machine (2026-11-30: 119.96 s user + 23.53 s system, 0.90 GB peak RSS, 10 min 42 s wall on a
// shared, loaded machine). Issue 12 measured ≈ 373 CPU-s including the module downloads.
const sourceBuildCPUSeconds = 143.5

// BenchmarkReleaseBinary reports the release binary's size and archive size (built with
// .goreleaser.yaml's flags, ldflags and env, see releaseBuild; no goal since issue 32 withdrew
// issue 22's 30 MB: the release inlines again) and what issue 22's goal still bounds, the time
// from "archive URL known" to the fetched binary having started and answered `bot version`
// (download from loopback, verify against the pinned sums, unpack, exec; goal ≤ 250 ms). On the
// shared 2-core machine the wall time follows the load: the fastest run and the CPU time (user +
// system of the script, the programs it ran, and `bot version`) are reported next to the mean.
func BenchmarkReleaseBinary(b *testing.B) {
	ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
	defer cancel()
	bin := filepath.Join(b.TempDir(), "bot")
	args, env := releaseBuild(b, bin)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		b.Fatal(err)
	}
	root := b.TempDir()
	archive := release(b, root, bin)
	ai, err := os.Stat(archive)
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(http.StripPrefix("/download", http.FileServer(http.Dir(root))))
	defer srv.Close()
	var total, cpu time.Duration
	best := time.Duration(1<<63 - 1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dir := filepath.Join(b.TempDir(), "pocbot")
		start := time.Now()
		fetch := fetchBotCmd(ctx, srv.URL+"/download", pinnedSums(root), dir)
		var se bytes.Buffer
		fetch.Stderr = &se
		out, err := fetch.Output()
		if err != nil {
			b.Fatalf("fetch: %v: %s", err, se.String())
		}
		version := exec.CommandContext(ctx, strings.TrimSpace(string(out)), "version")
		if v, err := version.CombinedOutput(); err != nil {
			b.Fatalf("bot version: %v\n%s", err, v)
		}
		took := time.Since(start)
		total, best = total+took, min(best, took)
		for _, st := range []*os.ProcessState{fetch.ProcessState, version.ProcessState} {
			cpu += st.UserTime() + st.SystemTime() // the script's include the programs it waited for
		}
	}
	mb := float64(fi.Size()) / 1e6
	ms := float64((total / time.Duration(b.N)).Microseconds()) / 1000
	b.ReportMetric(mb, "MB-binary")
	b.ReportMetric(float64(ai.Size())/1e6, "MB-archive")
	b.ReportMetric(ms, "ms-download-verify-start")
	b.ReportMetric(float64(best.Microseconds())/1000, "ms-download-verify-start-best")
	b.ReportMetric(float64((cpu/time.Duration(b.N)).Microseconds())/1000, "ms-cpu-download-verify-start")
	b.ReportMetric(ms/250, "ratio-start-to-250ms-goal")
}
