package rescue

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The interpreter understands the bot's rescue commands and little else:
// words with single/double quotes and backslashes, ";", "&&", "|", the
// process substitution ">(cmd >&2)" or ">(cmd >&3)" (bash only), and the
// commands set, exec 3>&1, command -v, id, true, echo, sudo, bash -c, sh -c,
// sync, lsblk, curl, zstd, xz, tee, dd and sha256sum. Anything else fails like an unknown
// command (exit 127), so a change in the bot's commands shows up as a test
// failure instead of passing silently.

type token struct {
	op   string // ";", "&&", "|" or "" for a word
	word string
	sub  string // inner text of >( … )
}

func lex(s string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			i++
		case c == ';':
			toks = append(toks, token{op: ";"})
			i++
		case c == '|':
			toks = append(toks, token{op: "|"})
			i++
		case strings.HasPrefix(s[i:], "&&"):
			toks = append(toks, token{op: "&&"})
			i += 2
		case strings.HasPrefix(s[i:], ">("):
			depth, j := 1, i+2
			for j < len(s) && depth > 0 {
				switch s[j] {
				case '(':
					depth++
				case ')':
					depth--
				}
				j++
			}
			if depth != 0 {
				return nil, errors.New("syntax error: unclosed >(")
			}
			toks = append(toks, token{sub: s[i+2 : j-1]})
			i = j
		default:
			var w strings.Builder
			for i < len(s) && !strings.ContainsRune(" \t\n;|", rune(s[i])) && !strings.HasPrefix(s[i:], "&&") {
				switch s[i] {
				case '\'':
					j := strings.IndexByte(s[i+1:], '\'')
					if j < 0 {
						return nil, errors.New("syntax error: unterminated quote")
					}
					w.WriteString(s[i+1 : i+1+j])
					i += j + 2
				case '"':
					i++
					for i < len(s) && s[i] != '"' {
						if s[i] == '\\' && i+1 < len(s) {
							i++
						}
						w.WriteByte(s[i])
						i++
					}
					if i >= len(s) {
						return nil, errors.New("syntax error: unterminated double quote")
					}
					i++
				case '\\':
					if i+1 < len(s) {
						w.WriteByte(s[i+1])
					}
					i += 2
				default:
					w.WriteByte(s[i])
					i++
				}
			}
			toks = append(toks, token{word: w.String()})
		}
	}
	return toks, nil
}

type stage struct {
	args []string
	sub  []string // process substitution, if any
}

type pipeline struct {
	stages []stage
	sep    string // separator before the next pipeline
}

func parse(cmd string) ([]pipeline, error) {
	toks, err := lex(cmd)
	if err != nil {
		return nil, err
	}
	var out []pipeline
	cur := pipeline{}
	st := stage{}
	flushStage := func() error {
		if len(st.args) == 0 {
			return errors.New("syntax error near unexpected token")
		}
		cur.stages = append(cur.stages, st)
		st = stage{}
		return nil
	}
	for _, t := range toks {
		switch t.op {
		case "|":
			if err := flushStage(); err != nil {
				return nil, err
			}
		case ";", "&&":
			if err := flushStage(); err != nil {
				return nil, err
			}
			cur.sep = t.op
			out = append(out, cur)
			cur = pipeline{}
		default:
			if t.sub != "" {
				inner, err := lex(t.sub)
				if err != nil {
					return nil, err
				}
				for _, it := range inner {
					if it.op != "" || it.sub != "" {
						return nil, errors.New("unsupported process substitution")
					}
					st.sub = append(st.sub, it.word)
				}
				continue
			}
			st.args = append(st.args, t.word)
		}
	}
	if len(st.args) > 0 {
		if err := flushStage(); err != nil {
			return nil, err
		}
	}
	if len(cur.stages) > 0 {
		out = append(out, cur)
	}
	return out, nil
}

// exitError carries a command's exit status.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func fail(code int, format string, a ...any) error {
	return &exitError{code: code, msg: fmt.Sprintf(format, a...)}
}

// shell runs commands for one session. The session's command is read by the
// login shell, which is not bash (bash is false: dash's /bin/sh rules, no
// pipefail, no process substitution); "bash -c script" runs script with
// bash's rules. root says whether the commands run as root: the rescue user
// is not root and gets there only through sudo.
type shell struct {
	srv    *Server
	stderr io.Writer
	stdin  io.Reader
	bash   bool
	root   bool
	mu     *sync.Mutex // serialises stderr writes from concurrent stages
	fd3    io.Writer   // file descriptor 3 once "exec 3>&1" opened it; nil before
}

func newShell(srv *Server, stdin io.Reader, stderr io.Writer) *shell {
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	return &shell{srv: srv, stdin: stdin, stderr: stderr, root: srv.opts.User == "root", mu: &sync.Mutex{}}
}

func (sh *shell) errorf(format string, a ...any) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	fmt.Fprintf(sh.stderr, format, a...)
}

// name is how the shell names itself in its messages.
func (sh *shell) name() string {
	if sh.bash {
		return "bash: line 1"
	}
	return "sh: 1"
}

// run executes cmd and returns its exit status.
func (sh *shell) run(ctx context.Context, cmd string, stdout io.Writer) int {
	pls, err := parse(cmd)
	if err != nil {
		sh.errorf("%s: %v\n", sh.name(), err)
		return 2
	}
	if !sh.bash {
		// dash refuses the whole script before running any of it.
		for _, pl := range pls {
			for _, st := range pl.stages {
				if st.sub != nil {
					sh.errorf("sh: 1: Syntax error: \"(\" unexpected\n")
					return 2
				}
			}
		}
	}
	pipefail := false
	status := 0
	for i, pl := range pls {
		if i > 0 && pls[i-1].sep == "&&" && status != 0 {
			continue
		}
		if len(pl.stages) == 1 && len(pl.stages[0].args) == 3 && pl.stages[0].args[0] == "set" &&
			pl.stages[0].args[1] == "-o" && pl.stages[0].args[2] == "pipefail" {
			if !sh.bash {
				// set is a special built-in: its error ends a
				// non-interactive dash.
				sh.errorf("sh: 1: set: Illegal option -o pipefail\n")
				return 2
			}
			pipefail, status = true, 0
			continue
		}
		if len(pl.stages) == 1 && len(pl.stages[0].args) == 2 && pl.stages[0].args[0] == "exec" {
			// exec with only a redirection changes the shell's own descriptors; the stand-in
			// knows the one the bot uses: a copy of standard output on fd 3.
			if pl.stages[0].args[1] != "3>&1" {
				sh.errorf("%s: exec: the stand-in knows only exec 3>&1\n", sh.name())
				return 2
			}
			sh.fd3, status = lockedWriter{mu: sh.mu, w: stdout}, 0
			continue
		}
		status = sh.pipeline(ctx, pl, stdout, pipefail)
	}
	return status
}

func (sh *shell) pipeline(ctx context.Context, pl pipeline, stdout io.Writer, pipefail bool) int {
	n := len(pl.stages)
	codes := make([]int, n)
	var wg sync.WaitGroup
	var in io.Reader = sh.stdin
	for i, st := range pl.stages {
		var out io.Writer = stdout
		var pw *io.PipeWriter
		var next *io.PipeReader
		if i < n-1 {
			next, pw = io.Pipe()
			out = pw
		}
		wg.Add(1)
		go func(i int, st stage, in io.Reader, out io.Writer, pw *io.PipeWriter) {
			defer wg.Done()
			err := sh.exec(ctx, st, in, out)
			if err != nil {
				var ee *exitError
				if errors.As(err, &ee) {
					codes[i] = ee.code
					if ee.msg != "" {
						sh.errorf("%s\n", ee.msg)
					}
				} else {
					codes[i] = 1
					sh.errorf("%s: %v\n", st.args[0], err)
				}
			}
			// Unblock the neighbours like a closed pipe would: the reader
			// sees EOF, the writer sees EPIPE.
			if pw != nil {
				pw.Close()
			}
			if pr, ok := in.(*io.PipeReader); ok {
				pr.CloseWithError(errors.New("broken pipe"))
			}
		}(i, st, in, out, pw)
		if next != nil {
			in = next
		}
	}
	wg.Wait()
	if pipefail {
		for i := n - 1; i >= 0; i-- {
			if codes[i] != 0 {
				return codes[i]
			}
		}
		return 0
	}
	return codes[n-1]
}

// tools are the commands of the rescue image the interpreter knows.
var tools = []string{"bash", "sh", "sudo", "id", "true", "echo", "sync", "lsblk", "curl", "zstd", "xz", "tee", "sha256sum", "dd"}

// has tells whether the rescue image has the command (Options.Missing).
func (s *Server) has(name string) bool {
	if !slices.Contains(tools, name) {
		return false
	}
	return !slices.Contains(s.opts.Missing, name)
}

func (sh *shell) exec(ctx context.Context, st stage, in io.Reader, out io.Writer) error {
	s := sh.srv
	s.record(strings.Join(st.args, " "))
	if st.args[0] == "command" { // a built-in of every shell
		if len(st.args) != 3 || st.args[1] != "-v" {
			return fail(2, "%s: command: the stand-in answers only command -v NAME", sh.name())
		}
		if !s.has(st.args[2]) {
			return fail(1, "")
		}
		_, err := fmt.Fprintf(out, "/usr/bin/%s\n", st.args[2])
		return err
	}
	if !s.has(st.args[0]) {
		if sh.bash {
			return fail(127, "bash: line 1: %s: command not found", st.args[0])
		}
		return fail(127, "sh: 1: %s: not found", st.args[0])
	}
	switch st.args[0] {
	case "true":
		return nil
	case "echo":
		_, err := fmt.Fprintln(out, strings.Join(st.args[1:], " "))
		return err
	case "id":
		return sh.id(st.args[1:], out)
	case "sudo":
		return sh.sudo(ctx, st.args[1:], in, out)
	case "bash", "sh":
		if len(st.args) != 3 || st.args[1] != "-c" {
			return fail(2, "%s: the stand-in runs only %s -c SCRIPT", st.args[0], st.args[0])
		}
		sub := *sh
		sub.bash, sub.stdin = st.args[0] == "bash", in
		if code := sub.run(ctx, st.args[2], out); code != 0 {
			return fail(code, "")
		}
		return nil
	case "sync":
		return s.syncDisk()
	case "lsblk":
		return s.lsblk(st.args[1:], out)
	case "curl":
		return s.curl(ctx, st.args[1:], out)
	case "zstd", "xz":
		if len(st.args) != 2 || st.args[1] != "-dc" {
			return fail(1, "%s: only -dc is supported by the stand-in, got %q", st.args[0], st.args[1:])
		}
		if err := decompressWith(ctx, st.args[0], in, out, fallbacks[st.args[0]]); err != nil {
			return fail(1, "%s: %v", st.args[0], err)
		}
		return nil
	case "tee":
		return sh.tee(ctx, st, in, out)
	case "sha256sum":
		if len(st.args) != 1 {
			return fail(1, "sha256sum: only stdin is supported by the stand-in")
		}
		h := sha256.New()
		if _, err := io.Copy(h, in); err != nil {
			return fail(1, "sha256sum: -: %v", err)
		}
		_, err := fmt.Fprintf(out, "%s  -\n", hex.EncodeToString(h.Sum(nil)))
		return err
	case "dd":
		return sh.dd(ctx, st.args[1:], in, out)
	}
	return fail(127, "%s: %s: not found", sh.name(), st.args[0])
}

func (sh *shell) id(args []string, out io.Writer) error {
	uid, name := 1000, sh.srv.opts.User
	if sh.root {
		uid, name = 0, "root"
	}
	switch strings.Join(args, " ") {
	case "-u":
		_, err := fmt.Fprintln(out, uid)
		return err
	case "-un", "-nu", "-u -n", "-n -u":
		_, err := fmt.Fprintln(out, name)
		return err
	case "":
		_, err := fmt.Fprintf(out, "uid=%d(%s) gid=%d(%s) groups=%d(%s)\n", uid, name, uid, name, uid, name)
		return err
	}
	return fail(1, "id: the stand-in answers only id, id -u and id -un")
}

// sudo follows sudo(8) for the options the bot may use: -S reads the
// password from standard input (one line, read byte by byte so that the rest
// of the input is left to the command), -p sets the prompt, -n never asks
// and fails when a password is needed; without -S and without a terminal,
// sudo cannot ask. Root and a passwordless sudoers entry are never asked.
func (sh *shell) sudo(ctx context.Context, args []string, in io.Reader, out io.Writer) error {
	s := sh.srv
	stdinPW, nonInteractive := false, false
	prompt := fmt.Sprintf("[sudo] password for %s: ", s.opts.User)
	i := 0
opts:
	for ; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			i++
			break opts
		case a == "-S":
			stdinPW = true
		case a == "-n":
			nonInteractive = true
		case a == "-p" && i+1 < len(args):
			i++
			prompt = args[i]
		case strings.HasPrefix(a, "-"):
			return fail(1, "sudo: the stand-in does not know the option %s", a)
		default:
			break opts
		}
	}
	if i >= len(args) {
		return fail(1, "usage: sudo [-nS] [-p prompt] [--] command")
	}
	if !sh.root && !s.opts.SudoNoPassword {
		switch {
		case nonInteractive:
			return fail(1, "sudo: a password is required")
		case !stdinPW:
			return fail(1, "sudo: a terminal is required to read the password; either use the -S option to read from standard input or configure an askpass helper")
		}
		for try := 0; ; try++ {
			sh.errorf("%s", prompt)
			line, ok := readLine(in)
			if !ok {
				if try == 0 {
					return fail(1, "sudo: no password was provided")
				}
				return fail(1, "sudo: %d incorrect password attempt(s)", try)
			}
			if s.opts.Password != "" && subtle.ConstantTimeCompare([]byte(line), []byte(s.opts.Password)) == 1 {
				break
			}
			if try == 2 {
				return fail(1, "sudo: 3 incorrect password attempts")
			}
			sh.errorf("Sorry, try again.\n")
		}
	}
	sub := *sh
	sub.root = true
	return sub.exec(ctx, stage{args: args[i:]}, in, out)
}

// readLine reads one line a byte at a time, as sudo does, leaving the rest.
func readLine(r io.Reader) (string, bool) {
	var b strings.Builder
	var c [1]byte
	for {
		n, err := r.Read(c[:])
		if n == 1 {
			if c[0] == '\n' {
				return b.String(), true
			}
			b.WriteByte(c[0])
		}
		if err != nil {
			return b.String(), b.Len() > 0
		}
	}
}

func (sh *shell) tee(ctx context.Context, st stage, in io.Reader, out io.Writer) error {
	if len(st.args) != 1 || len(st.sub) == 0 {
		return fail(1, "tee: the stand-in supports only tee >(command)")
	}
	sub := st.sub
	var subOut io.Writer = io.Discard
	switch sub[len(sub)-1] {
	case ">&2":
		sub = sub[:len(sub)-1]
		subOut = lockedWriter{mu: sh.mu, w: sh.stderr}
	case ">&3":
		if sh.fd3 == nil {
			return fail(1, "%s: 3: Bad file descriptor", sh.name())
		}
		sub = sub[:len(sub)-1]
		subOut = sh.fd3
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := sh.exec(ctx, stage{args: sub}, pr, subOut)
		pr.CloseWithError(errors.New("broken pipe"))
		done <- err
	}()
	_, err := io.Copy(io.MultiWriter(out, pw), in)
	pw.Close()
	// Bash does not wait for a process substitution, but the SSH channel
	// stays open until it closes stderr; waiting here gives the same order.
	<-done
	if err != nil {
		return fail(1, "tee: %v", err)
	}
	return nil
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (s *Server) lsblk(args []string, out io.Writer) error {
	if len(args) == 0 || args[0] != "-J" {
		return fail(1, "lsblk: the stand-in answers only -J")
	}
	type dev struct {
		Name       string  `json:"name"`
		Size       int64   `json:"size"`
		Type       string  `json:"type"`
		Mountpoint *string `json:"mountpoint"`
		RO         bool    `json:"ro"`
		RM         bool    `json:"rm"`
		Children   []dev   `json:"children,omitempty"`
	}
	disk := dev{Name: "sda", Size: s.opts.DiskSize, Type: "disk"}
	if s.opts.MountPoint != "" {
		mp := s.opts.MountPoint
		disk.Children = []dev{{Name: "sda1", Size: s.opts.DiskSize / 2, Type: "part", Mountpoint: &mp}}
	}
	// The rescue system itself runs from RAM; a loop device shows up too,
	// and must never be chosen.
	devs := []dev{{Name: "loop0", Size: 512 << 20, Type: "loop", RO: true}, disk}
	return json.NewEncoder(out).Encode(map[string]any{"blockdevices": devs})
}

func (s *Server) curl(ctx context.Context, args []string, out io.Writer) error {
	var u string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--retry":
			i++
		case a == "--" && i+1 < len(args):
			u = args[i+1]
			i++
		case strings.HasPrefix(a, "-"):
		default:
			u = a
		}
	}
	if u == "" {
		return fail(2, "curl: no URL specified")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fail(3, "curl: (3) URL rejected: %v", err)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return fail(7, "curl: (7) Failed to connect: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		return fail(22, "curl: (22) The requested URL returned error: %d", resp.StatusCode)
	}
	if _, err := io.Copy(out, resp.Body); err != nil {
		return fail(18, "curl: (18) transfer closed with outstanding read data remaining: %v", err)
	}
	return nil
}

func (sh *shell) dd(ctx context.Context, args []string, in io.Reader, out io.Writer) error {
	s := sh.srv
	opt := map[string]string{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			return fail(1, "dd: unrecognized operand %q", a)
		}
		opt[k] = v
	}
	for _, dev := range []string{opt["if"], opt["of"]} {
		if dev != "" && dev != "/dev/sda" {
			return fail(1, "dd: failed to open '%s': No such file or directory", dev)
		}
		if dev != "" && !sh.root {
			// /dev/sda is root:disk 0660; the rescue user is in neither.
			return fail(1, "dd: failed to open '%s': Permission denied", dev)
		}
	}
	progress := opt["status"] == "progress"
	start := time.Now()
	shown := false // a progress line waits for its newline
	report := func(n int64, final bool) {
		el := time.Since(start).Seconds()
		rate := fmt.Sprintf("%.1f MB/s", float64(n)/1e6/max(el, 1e-9))
		switch {
		case final:
			// GNU dd ends a pending progress line before its final stats.
			nl := ""
			if shown {
				nl = "\n"
			}
			sh.errorf("%s%d+0 records in\n%d+0 records out\n%d bytes (%d MB, %d MiB) copied, %g s, %s\n", nl, n>>22, n>>22, n, n/1e6, n>>20, el, rate)
		case progress:
			// GNU dd's progress line: "\r" then the stats, no newline (the next report overwrites it).
			sh.errorf("\r%d bytes (%d MB, %d MiB) copied, %.0f s, %s", n, n/1e6, n>>20, el, rate)
			shown = true
		}
	}
	switch {
	case opt["of"] == "/dev/sda":
		f, err := os.OpenFile(s.opts.DiskPath, os.O_WRONLY, 0)
		if err != nil {
			return fail(1, "dd: failed to open '/dev/sda': %v", err)
		}
		defer f.Close()
		var n int64
		buf := make([]byte, 4<<20)
		last := time.Now()
		for {
			if ctx.Err() != nil {
				return fail(1, "dd: interrupted")
			}
			k, rerr := io.ReadFull(in, buf)
			if k > 0 {
				if n+int64(k) > s.opts.DiskSize {
					report(n, true)
					return fail(1, "dd: error writing '/dev/sda': No space left on device")
				}
				if _, err := f.WriteAt(buf[:k], n); err != nil {
					return fail(1, "dd: error writing '/dev/sda': %v", err)
				}
				n += int64(k)
				if time.Since(last) >= time.Second {
					last = time.Now()
					report(n, false)
				}
			}
			if rerr != nil {
				break
			}
		}
		// The stand-in's image is small; a real disk takes the profile's write time, and
		// dd reports its progress every second meanwhile.
		if wait := time.Until(start.Add(s.opts.WriteTime)); wait > 0 {
			done := time.NewTimer(wait)
			defer done.Stop()
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
		writing:
			for {
				select {
				case <-ctx.Done():
					return fail(1, "dd: interrupted")
				case <-tick.C:
					report(n, false)
				case <-done.C:
					break writing
				}
			}
		}
		report(n, true)
		s.written.Store(n)
		return nil
	case opt["if"] == "/dev/sda":
		count, err := strconv.ParseInt(opt["count"], 10, 64)
		if err != nil || !strings.Contains(opt["iflag"], "count_bytes") {
			return fail(1, "dd: the stand-in reads the disk only with iflag=count_bytes count=N")
		}
		f, err := os.Open(s.opts.DiskPath)
		if err != nil {
			return fail(1, "dd: failed to open '/dev/sda': %v", err)
		}
		defer f.Close()
		n, err := io.Copy(out, io.NewSectionReader(f, 0, min(count, s.opts.DiskSize)))
		if err != nil {
			return fail(1, "dd: error reading '/dev/sda': %v", err)
		}
		if opt["status"] != "none" {
			report(n, true)
		}
		return nil
	}
	return fail(1, "dd: the stand-in needs if=/dev/sda or of=/dev/sda")
}
