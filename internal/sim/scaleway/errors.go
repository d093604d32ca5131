package scaleway

import (
	"encoding/json"
	"net/http"
)

// Error bodies. Shapes are those of the recordings (not_found per API) or,
// where no recording has one, those scaleway-sdk-go's scw.ResponseError
// decodes into typed errors (quotas_exceeded, precondition_failed,
// transient_state, invalid_arguments, out_of_stock), so that the bot's
// errors.As checks behave as against the real API.

// instanceNotFound is the Instance API's 404 (resource: instance_server,
// instance_ip, instance_security_group, instance_volume).
func instanceNotFound(w http.ResponseWriter, resource, id string) {
	writeJSON(w, http.StatusNotFound, map[string]any{
		"type": "not_found", "message": "resource is not found", "resource": resource, "resource_id": id,
	})
}

// blockNotFound is the Block and IAM APIs' 404 (resource: volume, snapshot,
// ssh_key).
func blockNotFound(w http.ResponseWriter, resource, id string) {
	writeJSON(w, http.StatusNotFound, map[string]any{
		"message": "resource is not found", "resource": resource, "resource_id": id, "type": "not_found",
	})
}

// baremetalNotFound is Elastic Metal's bare 404.
func baremetalNotFound(w http.ResponseWriter) {
	writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found"})
}

func invalidArg(w http.ResponseWriter, arg, help string) {
	writeJSON(w, http.StatusBadRequest, map[string]any{
		"type":    "invalid_arguments",
		"message": "invalid argument(s)",
		"details": []map[string]any{{"argument_name": arg, "reason": "constraint", "help_message": help}},
	})
}

// instanceInvalid is the Instance API's legacy 400.
func instanceInvalid(w http.ResponseWriter, msg string) {
	writeJSON(w, http.StatusBadRequest, map[string]any{"type": "invalid_request_error", "message": msg})
}

// stillInUse answers a delete of a resource something still uses.
func stillInUse(w http.ResponseWriter, help string) {
	writeJSON(w, http.StatusPreconditionFailed, map[string]any{
		"type": "precondition_failed", "message": "precondition failed",
		"precondition": "resource_still_in_use", "help_message": help,
	})
}

// transient answers an operation on a resource in a transient state.
func transient(w http.ResponseWriter, resource, id, state string) {
	writeJSON(w, http.StatusConflict, map[string]any{
		"type": "transient_state", "message": "resource is in a transient state",
		"resource": resource, "resource_id": id, "current_state": state,
	})
}

func outOfStock(w http.ResponseWriter, resource string) {
	writeJSON(w, http.StatusConflict, map[string]any{
		"type": "out_of_stock", "message": "out of stock", "resource": resource,
	})
}

// reshape marshals an SDK value into a JSON object, then drops the keys the
// real API does not send and adds those the SDK type lacks, so that key sets
// match the recordings while values come from the SDK's own types.
func reshape(v any, drop []string, add map[string]any) map[string]any {
	b, _ := json.Marshal(v)
	m := map[string]any{}
	_ = json.Unmarshal(b, &m)
	for _, k := range drop {
		delete(m, k)
	}
	for k, x := range add {
		m[k] = x
	}
	return m
}
