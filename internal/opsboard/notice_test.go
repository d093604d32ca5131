package opsboard

import "testing"

func TestWithNotice(t *testing.T) {
	body := "_Kept up to date_\n\n| a |\n" + marker + "\n"
	with := WithNotice(body, "> [!WARNING]\n> stopped")
	if with == body || WithNotice(with, "> [!WARNING]\n> stopped") != with {
		t.Fatalf("the notice is not added once:\n%s", with)
	}
	if got := WithNotice(with, ""); got != body {
		t.Fatalf("removing the notice changed the body:\n%q\nwant\n%q", got, body)
	}
	if len(ParseHistory(with).Entries) != len(ParseHistory(body).Entries) {
		t.Error("the notice changes the parsed history")
	}
}
