package fidelity
import ("testing";"fmt";"path/filepath")
func TestDbg(t *testing.T){
	dirs,_:=filepath.Glob("testdata/recordings/*")
	rep,err:=ReplayDir(t.Context(),dirs[0],replayOptions(t,dirs[0])); if err!=nil{t.Fatal(err)}
	for _,r:=range rep.Results{ if r.File[:3]!="up-"||r.Service!="scaleway"||r.ID<85||r.ID>105{continue}
		fmt.Printf("#%d %s %s rec=%d got=%d skip=%q %.150s || %.200s\n", r.ID, r.Request.Method, r.Request.URL[22:], r.Response.Code, r.Got.Code, r.Skipped, r.Response.Body, r.Got.Body)}
}
