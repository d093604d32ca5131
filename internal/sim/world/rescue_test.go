package world_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	baremetal "github.com/scaleway/scaleway-sdk-go/api/baremetal/v1"
	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"
	"github.com/scaleway/scaleway-sdk-go/scw"
	"golang.org/x/crypto/ssh"

	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/sim/world/worldtest"
)

// TestRescueHostTakesOnlyTheKeysGiven: the rescue system the world boots lets in the user
// "rescue" with a key passed in ssh_key_ids, and refuses another key of the same project.
func TestRescueHostTakesOnlyTheKeysGiven(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	w, err := world.Start(ctx, world.Options{Dir: t.TempDir(), TimeFactor: 0.002, S3: "file", HideRescueServer: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c := worldtest.Client(t, w, w.ScalewayURL)
	ia, bm := iam.NewAPI(c), baremetal.NewAPI(c)
	var signers []ssh.Signer
	var ids []string
	for i := range 2 {
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		s, _ := ssh.NewSignerFromKey(priv)
		k, err := ia.CreateSSHKey(&iam.CreateSSHKeyRequest{Name: "k" + strconv.Itoa(i), ProjectID: world.ProjectID,
			PublicKey: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.PublicKey())))}, scw.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		signers, ids = append(signers, s), append(ids, k.ID)
	}
	offers, err := bm.ListOffers(&baremetal.ListOffersRequest{Zone: scw.ZoneFrPar2, SubscriptionPeriod: "hourly", Name: scw.StringPtr("EM-A116X-SSD")}, scw.WithContext(ctx))
	if err != nil || len(offers.Offers) == 0 {
		t.Fatalf("offers: %v", err)
	}
	s, err := bm.CreateServer(&baremetal.CreateServerRequest{Zone: scw.ZoneFrPar2, OfferID: offers.Offers[0].ID, Name: "w",
		ProjectID: scw.StringPtr(world.ProjectID)}, scw.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	wait := func(bootType baremetal.ServerBootType) *baremetal.Server {
		t.Helper()
		for {
			got, err := bm.GetServer(&baremetal.GetServerRequest{Zone: scw.ZoneFrPar2, ServerID: s.ID}, scw.WithContext(ctx))
			if err != nil {
				t.Fatal(err)
			}
			if got.Status == baremetal.ServerStatusReady && got.BootType == bootType {
				return got
			}
			select {
			case <-ctx.Done():
				t.Fatalf("server still %s/%s: %v", got.Status, got.BootType, ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	wait(baremetal.ServerBootTypeNormal)
	if _, err := bm.RebootServer(&baremetal.RebootServerRequest{Zone: scw.ZoneFrPar2, ServerID: s.ID,
		BootType: baremetal.ServerBootTypeRescue, SSHKeyIDs: ids[:1]}, scw.WithContext(ctx)); err != nil {
		t.Fatal(err)
	}
	got := wait(baremetal.ServerBootTypeRescue)
	if got.RescueServer != nil {
		t.Fatalf("rescue_server %+v, want it withheld (HideRescueServer)", got.RescueServer)
	}
	addr := net.JoinHostPort(got.IPs[len(got.IPs)-1].Address.String(), "2222")
	for _, tc := range []struct {
		name, user string
		signer     ssh.Signer
		ok         bool
	}{
		{"the key given", "rescue", signers[0], true},
		{"another key of the project", "rescue", signers[1], false},
		{"root with the key given", "root", signers[0], false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cl *ssh.Client
			var err error
			// The host starts when the boot event is applied, which a loaded machine may do
			// well after the API says rescue: dial until it answers, within the test's minute.
			for {
				cl, err = ssh.Dial("tcp", addr, &ssh.ClientConfig{User: tc.user, Auth: []ssh.AuthMethod{ssh.PublicKeys(tc.signer)},
					HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: 5 * time.Second})
				if err == nil || strings.Contains(err.Error(), "unable to authenticate") {
					break
				}
				select {
				case <-ctx.Done():
					t.Fatalf("rescue host never answered: %v", err)
				case <-time.After(20 * time.Millisecond):
				}
			}
			if cl != nil {
				cl.Close()
			}
			if (err == nil) != tc.ok {
				t.Fatalf("login as %s: %v, want ok=%v", tc.user, err, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "unable to authenticate") {
				t.Fatalf("login as %s: %v, want an authentication refusal", tc.user, err)
			}
		})
	}
}
