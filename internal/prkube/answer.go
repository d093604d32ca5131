package prkube

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"
)

// State is where an answer stands.
type State string

// Answer states.
const (
	StateWorking State = "working" // the bot is on it (creating the cluster, or waiting for its up)
	StateIssued  State = "issued"  // the certificate is in the answer
	StateRefused State = "refused" // the request is not granted; Message says why and what to do
	StateFailed  State = "failed"  // the bot tried and failed (the up failed); Message says what
)

// Answer is what the bot tells the job, in the check run named CheckName whose external id is the
// request's nonce. Everything in it is public: the certificate is useless without the job's key.
type Answer struct {
	V           int       `json:"v"`
	State       State     `json:"state"`
	Message     string    `json:"message,omitempty"`
	Cluster     string    `json:"cluster,omitempty"`
	Server      string    `json:"server,omitempty"`
	CA          string    `json:"ca,omitempty"`          // the Kubernetes CA certificate, DER, standard base64
	Certificate string    `json:"certificate,omitempty"` // the job's client certificate, DER, standard base64
	NotAfter    time.Time `json:"not_after,omitzero"`
	Subject     string    `json:"subject,omitempty"`
}

// answerRE finds the machine-readable answer in a check run's text: an HTML comment, which the
// checks page does not show.
var answerRE = regexp.MustCompile(`<!-- pocbot:answer (\{.*?\}) -->`)

// Check is the check run's status, conclusion, title, summary and text for an answer. A
// refusal is neutral (it is not the pull request's code that failed), a failed up a failure.
func (a Answer) Check(runID int64, attempt int) (status, conclusion, title, summary, text string) {
	a.V = Version
	raw, _ := json.Marshal(a)
	text = "<!-- pocbot:answer " + string(raw) + " -->\n"
	who := fmt.Sprintf("workflow run %d (attempt %d)", runID, attempt)
	switch a.State {
	case StateIssued:
		status, conclusion = "completed", "success"
		title = fmt.Sprintf("kubeconfig issued to run %d, valid until %s", runID, a.NotAfter.UTC().Format("15:04 UTC"))
		summary = fmt.Sprintf("A client certificate for the cluster `%s` (%s) was signed for %s's own key, as `%s`, valid until %s. "+
			"The key never left that job; this certificate alone gives nothing.", a.Cluster, a.Server, who, a.Subject, a.NotAfter.UTC().Format(time.RFC3339))
	case StateWorking:
		status = "in_progress"
		title = "waiting for the cluster"
		summary = fmt.Sprintf("%s asked for the kubeconfig of `%s`: %s", who, a.Cluster, a.Message)
	case StateFailed:
		status, conclusion = "completed", "failure"
		title = "no kubeconfig: the cluster failed"
		summary = fmt.Sprintf("%s asked for the kubeconfig of `%s`: %s", who, a.Cluster, a.Message)
	default:
		status, conclusion = "completed", "neutral"
		title = "no kubeconfig: refused"
		summary = fmt.Sprintf("%s asked for a kubeconfig: %s", who, a.Message)
	}
	return status, conclusion, title, summary, text
}

// ParseAnswer reads the answer out of a check run's text.
func ParseAnswer(text string) (Answer, error) {
	m := answerRE.FindStringSubmatch(text)
	if m == nil {
		return Answer{}, errors.New("prkube: the check run holds no pocbot answer")
	}
	var a Answer
	if err := json.Unmarshal([]byte(m[1]), &a); err != nil {
		return Answer{}, fmt.Errorf("prkube: the answer does not decode: %w", err)
	}
	if a.V != Version {
		return Answer{}, fmt.Errorf("prkube: answer version %d, this Action speaks %d: the Action's pin and the bot's differ", a.V, Version)
	}
	switch a.State {
	case StateWorking, StateIssued, StateRefused, StateFailed:
	default:
		return Answer{}, fmt.Errorf("prkube: unknown answer state %q", a.State)
	}
	if a.State == StateIssued && (a.Server == "" || a.CA == "" || a.Certificate == "" || a.NotAfter.IsZero()) {
		return Answer{}, errors.New("prkube: an issued answer lacks its server, CA, certificate or NotAfter")
	}
	return a, nil
}
