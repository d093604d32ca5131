package fidelity

import (
	"reflect"

	baremetal "github.com/scaleway/scaleway-sdk-go/api/baremetal/v1"
	block "github.com/scaleway/scaleway-sdk-go/api/block/v1"
	domain "github.com/scaleway/scaleway-sdk-go/api/domain/v2beta1"
	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"
	instance "github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	catalog "github.com/scaleway/scaleway-sdk-go/api/product_catalog/v2alpha1"
	"github.com/scaleway/scaleway-sdk-go/scw"
)

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

// scalewayTypes are the SDK types (scaleway-sdk-go v1.39.0, the methods the bot calls: their
// *_sdk.go files) each Scaleway route's 2xx answer decodes into, by scwsim.EndpointKey. A route the
// table lacks is compared on its raw JSON keys.
var scalewayTypes = map[string]reflect.Type{
	"GET /instance/v1/zones/{zone}/ips":                                typeOf[instance.ListIPsResponse](),
	"POST /instance/v1/zones/{zone}/ips":                               typeOf[instance.CreateIPResponse](),
	"GET /instance/v1/zones/{zone}/ips/{id}":                           typeOf[instance.GetIPResponse](),
	"PATCH /instance/v1/zones/{zone}/ips/{id}":                         typeOf[instance.UpdateIPResponse](),
	"GET /instance/v1/zones/{zone}/products/servers":                   typeOf[instance.ListServersTypesResponse](),
	"GET /instance/v1/zones/{zone}/security_groups":                    typeOf[instance.ListSecurityGroupsResponse](),
	"POST /instance/v1/zones/{zone}/security_groups":                   typeOf[instance.CreateSecurityGroupResponse](),
	"GET /instance/v1/zones/{zone}/security_groups/{id}":               typeOf[instance.GetSecurityGroupResponse](),
	"PUT /instance/v1/zones/{zone}/security_groups/{id}/rules":         typeOf[instance.SetSecurityGroupRulesResponse](),
	"GET /instance/v1/zones/{zone}/servers":                            typeOf[instance.ListServersResponse](),
	"POST /instance/v1/zones/{zone}/servers":                           typeOf[instance.CreateServerResponse](),
	"GET /instance/v1/zones/{zone}/servers/{id}":                       typeOf[instance.GetServerResponse](),
	"PATCH /instance/v1/zones/{zone}/servers/{id}":                     typeOf[instance.UpdateServerResponse](),
	"POST /instance/v1/zones/{zone}/servers/{id}/action":               typeOf[instance.ServerActionResponse](),
	"GET /instance/v1/zones/{zone}/servers/{id}/user_data":             typeOf[instance.ListServerUserDataResponse](),
	"GET /block/v1/zones/{zone}/volumes":                               typeOf[block.ListVolumesResponse](),
	"POST /block/v1/zones/{zone}/volumes":                              typeOf[block.Volume](),
	"GET /block/v1/zones/{zone}/volumes/{id}":                          typeOf[block.Volume](),
	"GET /block/v1/zones/{zone}/snapshots":                             typeOf[block.ListSnapshotsResponse](),
	"GET /block/v1/zones/{zone}/snapshots/{id}":                        typeOf[block.Snapshot](),
	"POST /block/v1/zones/{zone}/snapshots/import-from-object-storage": typeOf[block.Snapshot](),
	"GET /baremetal/v1/zones/{zone}/offers":                            typeOf[baremetal.ListOffersResponse](),
	"GET /baremetal/v1/zones/{zone}/offers/{id}":                       typeOf[baremetal.Offer](),
	"GET /baremetal/v1/zones/{zone}/servers":                           typeOf[baremetal.ListServersResponse](),
	"POST /baremetal/v1/zones/{zone}/servers":                          typeOf[baremetal.Server](),
	"GET /baremetal/v1/zones/{zone}/servers/{id}":                      typeOf[baremetal.Server](),
	"DELETE /baremetal/v1/zones/{zone}/servers/{id}":                   typeOf[baremetal.Server](),
	"POST /baremetal/v1/zones/{zone}/servers/{id}/reboot":              typeOf[baremetal.Server](),
	"POST /baremetal/v1/zones/{zone}/servers/{id}/rescue":              typeOf[baremetal.Server](),
	"POST /baremetal/v1/zones/{zone}/servers/{id}/install":             typeOf[baremetal.Server](),
	"GET /iam/v1alpha1/quota":                                          typeOf[iam.ListQuotaResponse](),
	"GET /iam/v1alpha1/ssh-keys":                                       typeOf[iam.ListSSHKeysResponse](),
	"POST /iam/v1alpha1/ssh-keys":                                      typeOf[iam.SSHKey](),
	"GET /iam/v1alpha1/ssh-keys/{id}":                                  typeOf[iam.SSHKey](),
	"GET /iam/v1alpha1/api-keys":                                       typeOf[iam.ListAPIKeysResponse](),
	"GET /iam/v1alpha1/policies":                                       typeOf[iam.ListPoliciesResponse](),
	"GET /iam/v1alpha1/rules":                                          typeOf[iam.ListRulesResponse](),
	"GET /domain/v2beta1/dns-zones/{dns_zone}/records":                 typeOf[domain.ListDNSZoneRecordsResponse](),
	"PATCH /domain/v2beta1/dns-zones/{dns_zone}/records":               typeOf[domain.UpdateDNSZoneRecordsResponse](),
	"GET /product-catalog/v2alpha1/public-catalog/products":            typeOf[catalog.ListPublicCatalogProductsResponse](),
}

// scalewayType is what the SDK reads the route's answer of code as: an error answer as
// scw.ResponseError (scw/errors.go), a 2xx as the route's type.
func scalewayType(route string, code int) reflect.Type {
	if code/100 != 2 {
		return typeOf[scw.ResponseError]()
	}
	return scalewayTypes[route]
}
