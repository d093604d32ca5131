package rescue

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/pocbot/pocbot/internal/retry"
)

// DefaultUser is the login of Scaleway's Elastic Metal rescue system
// ("ssh rescue@<server>", docs-content pages/elastic-metal/how-to/
// use-rescue-mode.mdx), used when the API's rescue_server.user is empty.
const DefaultUser = "rescue"

// Target says how to reach the rescue system.
type Target struct {
	// Addr is host:port of the rescue SSH server.
	Addr string
	// User logs in; empty means DefaultUser. The rescue user is not root:
	// the disk is written through sudo.
	User string
	// Password and/or Signer authenticate; Scaleway's rescue boot gives a
	// password (also sudo's), and the keys passed in ssh_key_ids are
	// installed.
	Password string
	Signer   ssh.Signer
	// SudoPassword, when set, is asked for sudo's password when sudo wants
	// one and Password is empty: the API may fill rescue_server late. It
	// should wait for the password within its own bound.
	SudoPassword func(ctx context.Context) (string, error)
	// ExpectedHostKey, when set (a "SHA256:…" fingerprint or an
	// authorized_keys line), must match the server's key. Empty means
	// trust on first use: the key seen is returned in Result.HostKey for the
	// caller to record in the state.
	ExpectedHostKey string
	// Disk forces the install disk (e.g. "sda" or "/dev/sda"); empty picks
	// the first whole disk without mounted partitions.
	Disk string
	// WaitTimeout bounds the wait for SSH to answer (default 10 min: a
	// rescue reboot takes 3–5 min). RetryInterval is the pause between
	// attempts (default 5 s).
	WaitTimeout   time.Duration
	RetryInterval time.Duration
	// AuthGrace is how long refused credentials are tried again after the
	// first refusal (default 1 min), within WaitTimeout: Scaleway documents
	// that the rescue image gets the keys of ssh_key_ids and shows a
	// password, not that both are in place before its sshd answers, so a
	// refusal right after the boot is not yet a wrong key. Wrong credentials
	// fail after AuthGrace and at least three refusals.
	AuthGrace time.Duration
	// WriteTimeout bounds the image write and check (default 30 min).
	WriteTimeout time.Duration
}

// Image is the Talos raw image in the two compressions the Image Factory
// serves; the rescue system's tools pick one.
type Image struct {
	// Zstd is the metal-amd64.raw.zst URL, preferred; XZ the
	// metal-amd64.raw.xz URL, used when the rescue system has no zstd.
	Zstd, XZ string
}

// Result describes what was written.
type Result struct {
	// ImageURL is the image written and Decompressor the tool that
	// decompressed it ("zstd" or "xz").
	ImageURL, Decompressor string
	// Disk is the device path written, e.g. /dev/sda.
	Disk         string
	DiskSize     int64
	BytesWritten int64
	// SHA256 is the hex sha256 of the decompressed image as written and as
	// read back.
	SHA256 string
	// HostKey is the rescue server's host key fingerprint (SHA256:…), and
	// HostKeyLine the same key in authorized_keys form.
	HostKey     string
	HostKeyLine string
}

// ErrHostKeyMismatch is returned when the server's key differs from
// Target.ExpectedHostKey.
var ErrHostKeyMismatch = errors.New("rescue host key mismatch")

// TriggerHash keys the "write image" operation: it runs again only when the
// image URL, the disk or the server changes.
func TriggerHash(imageURL, disk, serverID string) string {
	h := sha256.New()
	for _, s := range []string{"rescue-write/v1", imageURL, disk, serverID} {
		// Length-prefix each field so that ("ab","c") and ("a","bc") differ.
		fmt.Fprintf(h, "%d:%s\n", len(s), s)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// WriteImage writes the raw image to the rescue system's install disk and
// checks it. See the package doc.
func WriteImage(ctx context.Context, t Target, img Image, log *slog.Logger) (Result, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	for _, u := range []string{img.Zstd, img.XZ} {
		if err := checkURL(u); err != nil {
			return Result{}, err
		}
	}
	client, hk, err := Dial(ctx, t, log)
	if err != nil {
		return Result{}, err
	}
	defer client.Close()
	res := Result{HostKey: ssh.FingerprintSHA256(hk), HostKeyLine: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(hk)))}
	if t.ExpectedHostKey == "" {
		log.Info("recorded rescue host key "+res.HostKey, "addr", t.Addr)
	}

	wt := t.WriteTimeout
	if wt <= 0 {
		wt = 30 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, wt)
	defer cancel()

	pl, err := probeAndPlan(ctx, client, t, img)
	if err != nil {
		return res, err
	}
	res.ImageURL, res.Decompressor = pl.url, pl.decompressor
	stdin, err := sudoStdin(ctx, t, pl.priv)
	if err != nil {
		return res, err
	}

	out, _, err := run(ctx, client, LsblkCommand, nil, nil)
	if err != nil {
		return res, fmt.Errorf("list disks on rescue system %s: %w", t.Addr, err)
	}
	disk, err := ChooseDisk(out, t.Disk)
	if err != nil {
		return res, fmt.Errorf("rescue system %s: %w", t.Addr, err)
	}
	res.Disk, res.DiskSize = "/dev/"+disk.Name, disk.Size
	log.Info("writing Talos image to disk", "disk", res.Disk, "disk_bytes", disk.Size, "image", pl.url, "decompressor", pl.decompressor, "privilege", pl.priv.String())

	w := diskWrite{client: client, t: t, pl: pl, disk: disk.Name, stdin: stdin, log: log}
	streamSum, written, err := w.write(ctx)
	if err != nil {
		return res, err
	}
	res.BytesWritten = written
	if err := w.verify(ctx, streamSum, written); err != nil {
		return res, err
	}
	res.SHA256 = streamSum
	log.Info("image checked on disk", "disk", res.Disk, "bytes", written, "sha256", streamSum)
	return res, nil
}

// probeAndPlan asks the rescue system what it has and decides how to write with it (plan).
func probeAndPlan(ctx context.Context, client *ssh.Client, t Target, img Image) (writePlan, error) {
	out, _, err := run(ctx, client, ProbeCommand, nil, nil)
	if err != nil && len(out) == 0 {
		return writePlan{}, fmt.Errorf("probe the rescue system %s: %w", t.Addr, err)
	}
	p, err := parseProbe(out)
	if err != nil {
		return writePlan{}, fmt.Errorf("probe the rescue system %s: %w", t.Addr, err)
	}
	pl, err := plan(p, img, t.Password != "" || t.SudoPassword != nil)
	if err != nil {
		return writePlan{}, fmt.Errorf("rescue system %s (user %s): %w", t.Addr, user(t), err)
	}
	return pl, nil
}

// sudoStdin is what the privileged scripts read on stdin: the rescue password when sudo wants
// it, nothing otherwise.
func sudoStdin(ctx context.Context, t Target, priv privilege) ([]byte, error) {
	if priv != sudoPassword {
		return nil, nil
	}
	pw := t.Password
	if pw == "" {
		var err error
		if pw, err = t.SudoPassword(ctx); err != nil {
			return nil, fmt.Errorf("rescue system %s: sudo wants the rescue password and the API gave none: %w", t.Addr, err)
		}
		if pw == "" {
			return nil, fmt.Errorf("rescue system %s: sudo wants the rescue password and the API gave none (rescue_server.password is empty): reboot the worker into rescue again", t.Addr)
		}
	}
	return []byte(pw + "\n"), nil
}

// diskWrite is the writing of one image to one disk of a rescue system, as planned.
type diskWrite struct {
	client *ssh.Client
	t      Target
	pl     writePlan
	disk   string // name under /dev
	stdin  []byte
	log    *slog.Logger
}

// write streams the image to the disk; it returns the stream's SHA-256 and its length as the
// pipeline reported them.
func (w diskWrite) write(ctx context.Context) (string, int64, error) {
	start := time.Now()
	dev := "/dev/" + w.disk
	var (
		written int64 = -1
		lastLog time.Time
	)
	out, stderr, err := run(ctx, w.client, w.pl.priv.wrap(WriteScript(w.pl.url, w.pl.decompressor, w.disk)), w.stdin, func(line string) {
		if m := ddBytes.FindStringSubmatch(line); m != nil {
			written, _ = strconv.ParseInt(m[1], 10, 64)
			if time.Since(lastLog) >= 5*time.Second {
				lastLog = time.Now()
				w.log.Info("dd progress", "disk", dev, "progress", line)
			}
		}
	})
	if err != nil {
		return "", 0, fmt.Errorf("write %s to %s on rescue system %s: %w; output: %s", w.pl.url, dev, w.t.Addr, err, tail(stderr))
	}
	streamSum := StreamSum(out)
	if streamSum == "" || written <= 0 {
		return "", 0, fmt.Errorf("write %s to %s on rescue system %s: the pipeline ended without reporting its sha256 and byte count (got %q, %d); output: %s", w.pl.url, dev, w.t.Addr, streamSum, written, tail(stderr))
	}
	w.log.Info("image written", "disk", dev, "bytes", written, "sha256", streamSum, "duration", time.Since(start).Round(time.Millisecond))
	return streamSum, written, nil
}

// verify reads the written bytes back and compares their hash with the stream's.
func (w diskWrite) verify(ctx context.Context, streamSum string, written int64) error {
	dev := "/dev/" + w.disk
	out, stderr, err := run(ctx, w.client, w.pl.priv.wrap(VerifyScript(w.disk, written)), w.stdin, nil)
	if err != nil {
		return fmt.Errorf("read back %s on rescue system %s: %w; output: %s", dev, w.t.Addr, err, tail(stderr))
	}
	back := strings.TrimSpace(string(out))
	if len(back) < 64 || back[:64] != streamSum {
		return fmt.Errorf("image check failed on %s (rescue system %s): the first %d bytes read back hash to %.64s, the stream written hashed to %s; the disk may be failing: write again", dev, w.t.Addr, written, back, streamSum)
	}
	return nil
}

func user(t Target) string { return cmp.Or(t.User, DefaultUser) }

// ProbeCommand asks the rescue system, in plain POSIX sh (the login shell
// need not be bash), who the session runs as, which tools it has, and
// whether sudo runs without a password. dash's command -v takes one name,
// hence one call per tool.
const ProbeCommand = "id -u; command -v bash; command -v sudo; command -v curl; command -v zstd; command -v xz; sudo -n true && echo " + sudoNoPasswordMark

const sudoNoPasswordMark = "sudo-without-password"

// probe is what ProbeCommand found.
type probe struct {
	uid          int
	tools        map[string]bool
	sudoNoPasswd bool
}

func parseProbe(out []byte) (probe, error) {
	p := probe{uid: -1, tools: map[string]bool{}}
	for i, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case i == 0:
			uid, err := strconv.Atoi(line)
			if err != nil {
				return p, fmt.Errorf("id -u answered %q, not a number", line)
			}
			p.uid = uid
		case line == sudoNoPasswordMark:
			p.sudoNoPasswd = true
		case strings.HasPrefix(line, "/"):
			p.tools[path.Base(line)] = true
		}
	}
	if p.uid < 0 {
		return p, errors.New("id -u answered nothing")
	}
	return p, nil
}

// privilege is how the commands that touch the disk become root.
type privilege int

const (
	asRoot       privilege = iota // the login is root
	sudoNoPass                    // sudo -n: a NOPASSWD entry
	sudoPassword                  // sudo -S: the rescue password on stdin
)

func (p privilege) String() string {
	return [...]string{"root login", "sudo without password", "sudo with the rescue password"}[p]
}

// wrap runs script with bash (pipefail and process substitution are bash's;
// the login shell may be dash) as root.
func (p privilege) wrap(script string) string {
	cmd := "bash -c " + ShellQuote(script)
	switch p {
	case sudoNoPass:
		return "sudo -n -- " + cmd
	case sudoPassword:
		// -p '': no prompt on stderr; -S: the password is the first line of
		// stdin, and sudo reads nothing more.
		return "sudo -S -p '' -- " + cmd
	}
	return cmd
}

// writePlan is what plan decided.
type writePlan struct {
	priv         privilege
	url          string
	decompressor string
}

// plan decides from the probe how to write: as root or through which sudo,
// and which compression to fetch (zstd when present, else xz). It fails,
// naming what is missing, when the rescue system cannot do it.
func plan(p probe, img Image, havePassword bool) (writePlan, error) {
	var pl writePlan
	var missing []string
	for _, tool := range []string{"bash", "curl"} {
		if !p.tools[tool] {
			missing = append(missing, tool)
		}
	}
	switch {
	case p.tools["zstd"]:
		pl.url, pl.decompressor = img.Zstd, "zstd"
	case p.tools["xz"]:
		pl.url, pl.decompressor = img.XZ, "xz"
	default:
		missing = append(missing, "zstd or xz")
	}
	switch {
	case p.uid == 0:
		pl.priv = asRoot
	case !p.tools["sudo"]:
		missing = append(missing, "sudo (the login is not root)")
	case p.sudoNoPasswd:
		pl.priv = sudoNoPass
	case havePassword:
		pl.priv = sudoPassword
	default:
		return pl, errors.New("the login is not root and sudo wants a password, but the API gave none (rescue_server.password is empty): reboot the worker into rescue again")
	}
	if len(missing) > 0 {
		return pl, fmt.Errorf("the rescue image lacks %s, needed to write the disk", strings.Join(missing, ", "))
	}
	return pl, nil
}

var (
	hexLine = regexp.MustCompile(`^[0-9a-f]{64}  -$`)
	ddBytes = regexp.MustCompile(`^(\d+) bytes`)
)

func checkURL(u string) error {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return fmt.Errorf("image URL %q is not an http(s) URL", u)
	}
	if strings.ContainsFunc(u, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("image URL %q contains control characters", u)
	}
	return nil
}

// ShellQuote quotes s for a POSIX shell.
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// LsblkCommand lists block devices as JSON, sizes in bytes.
const LsblkCommand = "lsblk -J -b -o NAME,SIZE,TYPE,MOUNTPOINT,RO,RM"

// WriteScript is the write pipeline, a bash script. pipefail makes a curl or
// decompressor failure fail the whole command (dd alone would exit 0 on a
// truncated stream); tee >(sha256sum >&3) hashes the bytes handed to dd;
// iflag=fullblock keeps dd's 4 MiB blocks whole when reading from a pipe;
// oflag=direct bypasses the page cache so that dd's progress is the disk's.
// decompressor is "zstd" or "xz" (both take -dc).
//
// The sum goes to standard output (fd 3, a copy of it made before the
// pipeline: a process substitution inside a pipeline inherits the pipe to
// dd as its standard output), never to standard error with dd: GNU dd's
// progress line is "\r<stats>" with no newline until the next report or the
// final stats (coreutils src/dd.c, print_xfer_stats and print_stats), so a
// sum written there when the stream ends lands in the middle of dd's line
// and cannot be told apart. dd with of= writes nothing to standard output.
func WriteScript(imageURL, decompressor, disk string) string {
	return "set -o pipefail; exec 3>&1; curl -fsSL --retry 5 --retry-connrefused -- " + ShellQuote(imageURL) +
		" | " + decompressor + " -dc | tee >(sha256sum >&3) | dd of=" + ShellQuote("/dev/"+disk) +
		" bs=4M iflag=fullblock oflag=direct status=progress"
}

// StreamSum is the SHA-256 that WriteScript's sha256sum printed on standard
// output ("<64 hex>  -"), or "" when there is none.
func StreamSum(stdout []byte) string {
	for _, l := range strings.Split(string(stdout), "\n") {
		if hexLine.MatchString(l) {
			return l[:64]
		}
	}
	return ""
}

// VerifyScript syncs, then hashes the first n bytes of the disk, read with
// O_DIRECT when n is sector-aligned (O_DIRECT refuses a partial sector).
func VerifyScript(disk string, n int64) string {
	iflag := "count_bytes"
	if n%512 == 0 {
		iflag += ",direct"
	}
	return "set -o pipefail; sync && dd if=" + ShellQuote("/dev/"+disk) + " bs=4M iflag=" + iflag +
		" count=" + strconv.FormatInt(n, 10) + " status=none | sha256sum"
}

// Disk is a whole disk seen by lsblk.
type Disk struct {
	Name string
	Size int64
	// Mounts lists the mountpoints on the disk or its partitions.
	Mounts []string
}

type lsblkDev struct {
	Name       string     `json:"name"`
	Size       flexInt    `json:"size"`
	Type       string     `json:"type"`
	Mountpoint *string    `json:"mountpoint"`
	RO         flexBool   `json:"ro"`
	RM         flexBool   `json:"rm"`
	Children   []lsblkDev `json:"children"`
}

// flexInt accepts lsblk's numbers (util-linux ≥ 2.33) and strings (older).
type flexInt int64

func (f *flexInt) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "null" || s == "" {
		return nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	*f = flexInt(n)
	return err
}

// flexBool accepts true/false and "0"/"1".
type flexBool bool

func (f *flexBool) UnmarshalJSON(b []byte) error {
	switch strings.Trim(string(b), `"`) {
	case "true", "1":
		*f = true
	}
	return nil
}

var diskName = regexp.MustCompile(`^[a-z][a-z0-9]*$`)

func mounts(d lsblkDev) []string {
	var out []string
	if d.Mountpoint != nil && *d.Mountpoint != "" {
		out = append(out, *d.Mountpoint)
	}
	for _, c := range d.Children {
		out = append(out, mounts(c)...)
	}
	return out
}

// ChooseDisk picks the install disk from lsblk -J output: a whole disk
// (type disk, not read-only, not removable) without mounted partitions.
// With want set, that disk must exist and be unmounted. Otherwise the first
// eligible disk by name is taken (sda before sdb, nvme0n1 before nvme1n1).
func ChooseDisk(lsblkJSON []byte, want string) (Disk, error) {
	var doc struct {
		Blockdevices []lsblkDev `json:"blockdevices"`
	}
	if err := json.Unmarshal(lsblkJSON, &doc); err != nil {
		return Disk{}, fmt.Errorf("parse lsblk output: %w", err)
	}
	want = strings.TrimPrefix(want, "/dev/")
	var ok []Disk
	var refused []string
	for _, d := range doc.Blockdevices {
		if d.Type != "disk" || !diskName.MatchString(d.Name) {
			continue
		}
		disk := Disk{Name: d.Name, Size: int64(d.Size), Mounts: mounts(d)}
		if want != "" && d.Name != want {
			continue
		}
		switch {
		case len(disk.Mounts) > 0:
			refused = append(refused, fmt.Sprintf("/dev/%s has mounted filesystems (%s)", d.Name, strings.Join(disk.Mounts, ", ")))
		case bool(d.RO):
			refused = append(refused, fmt.Sprintf("/dev/%s is read-only", d.Name))
		case bool(d.RM):
			refused = append(refused, fmt.Sprintf("/dev/%s is removable", d.Name))
		case d.Size <= 0:
			refused = append(refused, fmt.Sprintf("/dev/%s has no size", d.Name))
		default:
			ok = append(ok, disk)
		}
	}
	if len(ok) == 0 {
		if want != "" && len(refused) == 0 {
			return Disk{}, fmt.Errorf("install disk /dev/%s not found by lsblk", want)
		}
		if len(refused) == 0 {
			return Disk{}, errors.New("no whole disk found by lsblk: is the server booted in rescue mode?")
		}
		return Disk{}, fmt.Errorf("refusing to write the image: %s; unmount it or pick another disk", strings.Join(refused, "; "))
	}
	slices.SortFunc(ok, func(a, b Disk) int { return strings.Compare(a.Name, b.Name) })
	return ok[0], nil
}

func tail(b []byte) string {
	s := strings.TrimSpace(strings.ReplaceAll(string(b), "\r", "\n"))
	if len(s) > 600 {
		s = "…" + s[len(s)-600:]
	}
	return s
}

// lineWriter splits a stream on \n and \r (dd's progress uses \r) and keeps
// a copy of everything.
type lineWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	all  bytes.Buffer
	line func(string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.all.Len() < 1<<20 {
		w.all.Write(p)
	}
	w.buf.Write(p)
	for {
		b := w.buf.Bytes()
		i := bytes.IndexAny(b, "\r\n")
		if i < 0 {
			break
		}
		if l := strings.TrimSpace(string(b[:i])); l != "" && w.line != nil {
			w.line(l)
		}
		w.buf.Next(i + 1)
	}
	return len(p), nil
}

func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if l := strings.TrimSpace(w.buf.String()); l != "" && w.line != nil {
		w.line(l)
	}
	w.buf.Reset()
}

// run executes cmd in a new session with stdin as its input (nil: none);
// stderr lines go to onLine as they come. Cancelling ctx closes the session.
func run(ctx context.Context, c *ssh.Client, cmd string, stdin []byte, onLine func(string)) (stdout, stderr []byte, err error) {
	s, err := c.NewSession()
	if err != nil {
		return nil, nil, fmt.Errorf("open SSH session: %w", err)
	}
	defer s.Close()
	if stdin != nil {
		s.Stdin = bytes.NewReader(stdin)
	}
	ow := &limitedBuffer{max: 4 << 20}
	ew := &lineWriter{line: onLine}
	s.Stdout = ow
	s.Stderr = ew
	done := make(chan error, 1)
	go func() { done <- s.Run(cmd) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = s.Signal(ssh.SIGKILL)
		_ = s.Close()
		err = fmt.Errorf("command cut short: %w", ctx.Err())
	}
	// A command cut short returns while the session's copiers may still be writing: what is
	// returned are copies, taken under the writers' locks, and onLine is not called any more.
	ew.flush()
	ew.mu.Lock()
	defer ew.mu.Unlock()
	ew.line = nil
	return ow.bytes(), bytes.Clone(ew.all.Bytes()), err
}

// limitedBuffer keeps a command's stdout up to max bytes; the SSH session writes it from a
// goroutine of its own.
type limitedBuffer struct {
	mu  sync.Mutex
	b   bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len()+len(p) > l.max {
		return 0, errors.New("command output too large")
	}
	return l.b.Write(p)
}

func (l *limitedBuffer) bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}

// Dial connects to the rescue system, retrying until SSH answers or
// WaitTimeout passes. It returns the client and the server's host key.
func Dial(ctx context.Context, t Target, log *slog.Logger) (*ssh.Client, ssh.PublicKey, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if t.Password == "" && t.Signer == nil {
		return nil, nil, errors.New("rescue SSH: no password and no key to authenticate with")
	}
	wait := t.WaitTimeout
	if wait <= 0 {
		wait = 10 * time.Minute
	}
	every := t.RetryInterval
	if every <= 0 {
		every = 5 * time.Second
	}
	var auth []ssh.AuthMethod
	if t.Signer != nil {
		auth = append(auth, ssh.PublicKeys(t.Signer))
	}
	if t.Password != "" {
		pw := t.Password
		auth = append(auth, ssh.Password(pw), ssh.KeyboardInteractive(func(_, _ string, qs []string, _ []bool) ([]string, error) {
			ans := make([]string, len(qs))
			for i := range ans {
				ans[i] = pw
			}
			return ans, nil
		}))
	}
	expect, err := parseExpected(t.ExpectedHostKey)
	if err != nil {
		return nil, nil, err
	}

	deadline := time.Now().Add(wait)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	grace := t.AuthGrace
	if grace <= 0 {
		grace = time.Minute
	}
	const minAuthFailures = 3
	authFailures := 0
	var firstRefusal time.Time
	var (
		client *ssh.Client
		seen   ssh.PublicKey
	)
	// SSH is waited for at a fixed interval until the deadline: a server coming up in rescue
	// answers once, whatever the back-off.
	err = retry.Policy{Wait: every, MaxWait: every}.Do(ctx, "rescue SSH "+t.Addr, func(ctx context.Context, attempt int) retry.Outcome {
		cfg := &ssh.ClientConfig{
			User: user(t),
			Auth: auth,
			HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error {
				seen = key
				if expect != "" && ssh.FingerprintSHA256(key) != expect {
					return fmt.Errorf("%w: %s presents %s, the state recorded %s; the server may have been rebooted into rescue again (clear the recorded key) or someone is in the middle", ErrHostKeyMismatch, t.Addr, ssh.FingerprintSHA256(key), expect)
				}
				return nil
			},
			Timeout: 15 * time.Second,
		}
		c, err := dialOnce(ctx, t.Addr, cfg)
		if err == nil {
			if attempt > 1 {
				log.Info("rescue SSH answered", "addr", t.Addr, "attempts", attempt)
			}
			client = c
			return retry.Outcome{}
		}
		if errors.Is(err, ErrHostKeyMismatch) {
			return retry.Outcome{Err: err}
		}
		if strings.Contains(err.Error(), "unable to authenticate") {
			authFailures++
			if firstRefusal.IsZero() {
				firstRefusal = time.Now()
			}
			if since := time.Since(firstRefusal); authFailures >= minAuthFailures && since >= grace {
				return retry.Outcome{Err: fmt.Errorf("rescue SSH %s refused user %q %d times over %v: check the rescue credentials and the SSH key passed in ssh_key_ids: %w", t.Addr, user(t), authFailures, since.Round(time.Millisecond), err)}
			}
		}
		if attempt == 1 || attempt%6 == 0 {
			log.Info("waiting for rescue SSH", "addr", t.Addr, "attempt", attempt, "error", err.Error())
		}
		return retry.Outcome{Err: err, Retry: true}
	})
	var stopped *retry.Stopped
	if errors.As(err, &stopped) {
		return nil, nil, fmt.Errorf("rescue SSH on %s did not answer within %v (%d attempts; last error: %v): is the server in rescue mode and port open?", t.Addr, wait, stopped.Attempts, stopped.Last)
	}
	if err != nil {
		return nil, nil, err
	}
	return client, seen, nil
}

func dialOnce(ctx context.Context, addr string, cfg *ssh.ClientConfig) (*ssh.Client, error) {
	d := net.Dialer{Timeout: 10 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	// The handshake has its own deadline; a half-started sshd must not hang us.
	hd := time.Now().Add(cfg.Timeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(hd) {
		hd = dl
	}
	_ = conn.SetDeadline(hd)
	cc, chans, reqs, err := ssh.NewClientConn(conn, addr, cfg)
	if err != nil {
		conn.Close()
		return nil, err
	}
	_ = conn.SetDeadline(time.Time{})
	return ssh.NewClient(cc, chans, reqs), nil
}

// parseExpected turns an authorized_keys line or a fingerprint into a
// fingerprint.
func parseExpected(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasPrefix(s, "SHA256:") {
		return s, nil
	}
	k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(s))
	if err != nil {
		return "", fmt.Errorf("expected rescue host key is neither a SHA256: fingerprint nor an authorized_keys line: %w", err)
	}
	return ssh.FingerprintSHA256(k), nil
}
