package clusterops

// SetSaveFault makes every state save of o's operations call f first; an error fails the save
// (a crash from that point on, as far as the state can tell). nil removes it.
func SetSaveFault(o *Ops, f func() error) { o.saveFault = f }

// OutsideAdminCIDRs is outsideAdminCIDRs, for the table of status_test.go.
var OutsideAdminCIDRs = outsideAdminCIDRs

// PoolDown is poolDown, for its table.
var PoolDown = poolDown

// PoolWaves is poolWaves, for its table.
var PoolWaves = poolWaves
