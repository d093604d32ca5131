package fidelity

import (
	"reflect"

	"github.com/scaleway/scaleway-sdk-go/scw"
)

// scalewayTypes are the SDK types (scaleway-sdk-go v1.39.0) the bot reads each Scaleway route's
// answer as, by scwsim.EndpointKey.
var scalewayTypes = map[string]reflect.Type{}

// scalewayType is the route's answer type; an error answer is read as scw.ResponseError.
func scalewayType(route string) reflect.Type {
	return scalewayTypes[route]
}

var _ = scw.ResponseError{}
