package scaleway

import "time"

// Latency is the duration of each asynchronous transition, before
// Options.TimeFactor scales it. Figures come from the Date headers of the
// recordings (SPEC §9); those marked "estimate" were never recorded.
type Latency struct {
	ServerCreate     time.Duration // POST servers -> stopped: < 1 s, answered at once
	Poweron          time.Duration // starting -> running: ≈ 5 s
	Poweroff         time.Duration // stopping -> stopped: ≈ 41 s
	StopInPlace      time.Duration // stopping -> stopped in place: ≈ 46 s
	Terminate        time.Duration // stopping (terminating) -> gone, volumes available: 5-15 s recorded, 5 s
	Reboot           time.Duration // rebooting -> running: estimate 30 s
	IPAttach         time.Duration // pending -> attached: ≈ 1-2 s
	SGRules          time.Duration // syncing -> available: ≈ 1 s
	VolumeCreate     time.Duration // from snapshot, creating -> available: ≈ 5 s
	VolumeEmpty      time.Duration // from empty, creating -> available: ≈ 1 s
	VolumeUpdate     time.Duration // updating -> available: ≈ 5 s
	SnapshotOfVolume time.Duration // creating -> available: 5-31 s recorded, 5 s
	SnapshotImport   time.Duration // import from object storage: ≈ 212 s
	SnapshotDelete   time.Duration // deleting -> gone: answered at once
	BMDelivery       time.Duration // delivering -> ready: estimate 5-15 min, 8 min
	BMRescueReboot   time.Duration // reboot to rescue, SSH up: estimate 3-5 min, 4 min
	BMNormalReboot   time.Duration // reboot to normal: estimate 3 min
	BMStop           time.Duration // stopping -> stopped: estimate 1 min
	BMStart          time.Duration // starting -> ready: estimate 3 min
	BMDelete         time.Duration // deleting -> gone: ≈ 5 s
}

// DefaultLatency is the profile of SPEC §9.
func DefaultLatency() Latency {
	return Latency{
		ServerCreate:     0,
		Poweron:          5 * time.Second,
		Poweroff:         41 * time.Second,
		StopInPlace:      46 * time.Second,
		Terminate:        5 * time.Second,
		Reboot:           30 * time.Second,
		IPAttach:         1500 * time.Millisecond,
		SGRules:          time.Second,
		VolumeCreate:     5 * time.Second,
		VolumeEmpty:      time.Second,
		VolumeUpdate:     5 * time.Second,
		SnapshotOfVolume: 5 * time.Second,
		SnapshotImport:   212 * time.Second,
		BMDelivery:       8 * time.Minute,
		BMRescueReboot:   4 * time.Minute,
		BMNormalReboot:   3 * time.Minute,
		BMStop:           time.Minute,
		BMStart:          3 * time.Minute,
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
	return d
}
