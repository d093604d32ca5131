package scaleway

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// BenchFactor is the time factor the benchmarks scale the stand-ins' profiles by:
// POC_BENCH_FACTOR, 0.01 when it is unset. Anything but a positive number is an error.
func BenchFactor() (float64, error) {
	v := os.Getenv("POC_BENCH_FACTOR")
	if v == "" {
		return 0.01, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 {
		return 0, fmt.Errorf("POC_BENCH_FACTOR=%q is not a positive number", v)
	}
	return f, nil
}

// Latency is the duration of each asynchronous transition, before
// Options.TimeFactor scales it. Each figure names its source: the Date
// headers of a recording (an upper bound when the client polled: the
// Terraform provider polls about every 5 s, the CLI and the provider's
// Elastic Metal waiters every 15 s), or "estimate" when nothing recorded it.
// The first profile's figures were estimates; the recordings replace them where they
// exist (docs/seed.md, Latencies, lists what is still estimated). TF = terraform-provider-scaleway b2d45ed4
// internal/services/<svc>/testdata; CLI = scaleway-cli c2d470d8
// internal/namespaces/<ns>/testdata; "fixtures" = the copies in
// testdata/cassettes.
type Latency struct {
	// POST servers -> stopped: answered at once (fixtures, instance__*).
	ServerCreate time.Duration
	// starting -> running: 5 s (fixtures, instance__server-state-stop).
	Poweron time.Duration
	// stopping -> stopped: 41 s (fixtures, instance__server-state-stop).
	Poweroff time.Duration
	// stopping -> stopped in place: 46 s (fixtures, instance__server-state-stop).
	StopInPlace time.Duration
	// stopping (terminating) -> gone: 16 s. TF instance cassettes: 36 of 57
	// terminates gone within 5-6 s, 19 within 15-16 s, one 25 s
	// (data-source-servers-public-ips), one 118 s
	// (server-admin-password-encryption-ssh-key-id); 16 s is the slow half.
	Terminate time.Duration
	// in_use -> available once the server is gone: 5 s (CLI instance/v1
	// test-create-server-simple-default and 9 others: in_use right after the
	// server's DELETE, available 5-6 s later).
	VolumeDetach time.Duration
	// rebooting -> running: estimate 30 s (no recording reboots an Instance).
	Reboot time.Duration
	// pending -> attached: 1.5 s (fixtures, instance__server-with-reserved-ip).
	IPAttach time.Duration
	// syncing -> available: 1 s (fixtures, instance__security-group-basic).
	SGRules time.Duration
	// from snapshot, creating -> available: 5 s (fixtures, block__volume-from-snapshot).
	VolumeCreate time.Duration
	// from empty, creating -> available: 1 s (fixtures, block__volume-from-snapshot).
	VolumeEmpty time.Duration
	// updating -> available: 5 s (fixtures, block__volume-update-iops).
	VolumeUpdate time.Duration
	// creating -> available: 5 s; 5-31 s recorded (fixtures, block__*).
	SnapshotOfVolume time.Duration
	// import from Object Storage, creating -> available: 212 s (fixtures,
	// block__snapshot-from-s3, 2026-08-18, a 30 kB qcow2; the same TF test's
	// earlier recordings at 107d3728a, a71bb3736 and e6951d6e0 took 5 s).
	// The "≈ 1.5 min" of issue 10 matches no recording found.
	SnapshotImport time.Duration
	// deleting -> gone: answered at once (fixtures, block__*).
	SnapshotDelete time.Duration
	// delivering -> ready: 4 min 47 s (CLI baremetal/v1
	// test-reboot-server-errors-error-cannot-be-rebooted-while-not-delivered,
	// 12:45:24 -> 12:50:11). Other CLI creations were ready within 0-15 s
	// (test-create-server-simple-*): the long one is the safe figure.
	BMDelivery time.Duration
	// reboot with boot_type rescue -> ready: 15 s, the API transition of a
	// normal reboot (below). No recording reboots into rescue; how long the
	// rescue image's SSH takes after that is not recorded either.
	BMRescueReboot time.Duration
	// reboot -> stopping -> ready: 15 s (TF baremetal action-basic,
	// 18:22:20 -> 18:22:35).
	BMNormalReboot time.Duration
	// stopping -> stopped: 15 s (TF baremetal action-basic, 18:21:49 -> 18:22:04).
	BMStop time.Duration
	// starting -> ready: 15 s (TF baremetal action-basic, 18:22:05 -> 18:22:20).
	BMStart time.Duration
	// deleting -> gone: 5 s (fixtures, baremetal__*: 404 on the next GET).
	BMDelete time.Duration
}

// DefaultLatency is the recorded profile documented on Latency's fields.
func DefaultLatency() Latency {
	return Latency{
		ServerCreate:     0,
		Poweron:          5 * time.Second,
		Poweroff:         41 * time.Second,
		StopInPlace:      46 * time.Second,
		Terminate:        16 * time.Second,
		VolumeDetach:     5 * time.Second,
		Reboot:           30 * time.Second,
		IPAttach:         1500 * time.Millisecond,
		SGRules:          time.Second,
		VolumeCreate:     5 * time.Second,
		VolumeEmpty:      time.Second,
		VolumeUpdate:     5 * time.Second,
		SnapshotOfVolume: 5 * time.Second,
		SnapshotImport:   212 * time.Second,
		BMDelivery:       4*time.Minute + 47*time.Second,
		BMRescueReboot:   15 * time.Second,
		BMNormalReboot:   15 * time.Second,
		BMStop:           15 * time.Second,
		BMStart:          15 * time.Second,
		BMDelete:         5 * time.Second,
	}
}

// merge keeps d's values where o has zeros.
func (d Latency) merge(o Latency) Latency {
	pick := func(a *time.Duration, b time.Duration) {
		if b != 0 {
			*a = b
		}
	}
	pick(&d.ServerCreate, o.ServerCreate)
	pick(&d.Poweron, o.Poweron)
	pick(&d.Poweroff, o.Poweroff)
	pick(&d.StopInPlace, o.StopInPlace)
	pick(&d.Terminate, o.Terminate)
	pick(&d.Reboot, o.Reboot)
	pick(&d.IPAttach, o.IPAttach)
	pick(&d.SGRules, o.SGRules)
	pick(&d.VolumeCreate, o.VolumeCreate)
	pick(&d.VolumeEmpty, o.VolumeEmpty)
	pick(&d.VolumeUpdate, o.VolumeUpdate)
	pick(&d.SnapshotOfVolume, o.SnapshotOfVolume)
	pick(&d.SnapshotImport, o.SnapshotImport)
	pick(&d.SnapshotDelete, o.SnapshotDelete)
	pick(&d.BMDelivery, o.BMDelivery)
	pick(&d.BMRescueReboot, o.BMRescueReboot)
	pick(&d.BMNormalReboot, o.BMNormalReboot)
	pick(&d.BMStop, o.BMStop)
	pick(&d.BMStart, o.BMStart)
	pick(&d.BMDelete, o.BMDelete)
	pick(&d.VolumeDetach, o.VolumeDetach)
	return d
}
