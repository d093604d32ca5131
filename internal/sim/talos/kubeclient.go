package talos

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"go.yaml.in/yaml/v4"
)

// KubeClient is what kubectl does with a kubeconfig, for the harnesses that play a user of the
// cluster (the soak): the kubeconfig's current context's server, trusted through its CA, with its
// client certificate, on the ConfigMaps and Secrets of a namespace this stand-in serves
// (k8sapi.go). The request paths and bodies are the core/v1 REST API's.
type KubeClient struct {
	Server string
	hc     *http.Client
}

// KubeAnswer is a Kubernetes API answer other than success: the HTTP status and its
// metav1.Status reason.
type KubeAnswer struct {
	Code   int
	Reason string
}

func (a *KubeAnswer) Error() string {
	return fmt.Sprintf("kubernetes API answered %d %s", a.Code, a.Reason)
}

// NewKubeClient reads a kubeconfig of the shape Talos issues (base64 CA, client certificate and
// key data, one context named current).
func NewKubeClient(kubeconfig []byte) (*KubeClient, error) {
	var doc struct {
		Current  string `yaml:"current-context"`
		Contexts []struct {
			Name    string `yaml:"name"`
			Context struct {
				Cluster string `yaml:"cluster"`
				User    string `yaml:"user"`
			} `yaml:"context"`
		} `yaml:"contexts"`
		Clusters []struct {
			Name    string `yaml:"name"`
			Cluster struct {
				Server string `yaml:"server"`
				CA     string `yaml:"certificate-authority-data"`
			} `yaml:"cluster"`
		} `yaml:"clusters"`
		Users []struct {
			Name string `yaml:"name"`
			User struct {
				Cert string `yaml:"client-certificate-data"`
				Key  string `yaml:"client-key-data"`
			} `yaml:"user"`
		} `yaml:"users"`
	}
	if err := yaml.Unmarshal(kubeconfig, &doc); err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}

	var clusterName, userName string

	for _, c := range doc.Contexts {
		if c.Name == doc.Current {
			clusterName, userName = c.Context.Cluster, c.Context.User
		}
	}

	k := &KubeClient{}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: x509.NewCertPool()}

	for _, c := range doc.Clusters {
		if c.Name != clusterName {
			continue
		}

		ca, err := base64.StdEncoding.DecodeString(c.Cluster.CA)
		if err != nil || !tc.RootCAs.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("kubeconfig: cluster %q: no CA certificate (%v)", clusterName, err)
		}

		k.Server = c.Cluster.Server
	}

	for _, u := range doc.Users {
		if u.Name != userName {
			continue
		}

		cert, err1 := base64.StdEncoding.DecodeString(u.User.Cert)
		key, err2 := base64.StdEncoding.DecodeString(u.User.Key)

		pair, err := tls.X509KeyPair(cert, key)
		if err = errors.Join(err1, err2, err); err != nil {
			return nil, fmt.Errorf("kubeconfig: user %q: %w", userName, err)
		}

		tc.Certificates = []tls.Certificate{pair}
	}

	if k.Server == "" || len(tc.Certificates) == 0 {
		return nil, fmt.Errorf("kubeconfig: context %q names no server or no client certificate", doc.Current)
	}

	k.hc = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tc, DisableKeepAlives: true}}

	return k, nil
}

// Create makes the object name of plural ("configmaps" or "secrets") in namespace ns with data
// (a Secret's values are sent as stringData, which the apiserver folds into data).
func (k *KubeClient) Create(ctx context.Context, plural, ns, name string, data map[string]string) error {
	body, err := objectBody(plural, ns, name, data)
	if err != nil {
		return err
	}

	_, err = k.do(ctx, http.MethodPost, "/api/v1/namespaces/"+ns+"/"+plural, body, http.StatusCreated)

	return err
}

// objectBody is the JSON of a ConfigMap or Secret holding data.
func objectBody(plural, ns, name string, data map[string]string) ([]byte, error) {
	field := "data"
	if plural == resSecrets.plural {
		field = "stringData"
	}

	return json.Marshal(map[string]any{"apiVersion": "v1", "metadata": map[string]any{"name": name, "namespace": ns}, field: data})
}

// Update replaces the data of the object name of plural in namespace ns. The request carries no
// resourceVersion: an unconditional update, which the apiserver allows for ConfigMaps and Secrets.
func (k *KubeClient) Update(ctx context.Context, plural, ns, name string, data map[string]string) error {
	body, err := objectBody(plural, ns, name, data)
	if err != nil {
		return err
	}

	_, err = k.do(ctx, http.MethodPut, "/api/v1/namespaces/"+ns+"/"+plural+"/"+name, body, http.StatusOK)

	return err
}

// Delete deletes the object name of plural in namespace ns.
func (k *KubeClient) Delete(ctx context.Context, plural, ns, name string) error {
	_, err := k.do(ctx, http.MethodDelete, "/api/v1/namespaces/"+ns+"/"+plural+"/"+name, nil, http.StatusOK)

	return err
}

// Data reads the object's data (a Secret's decoded from base64).
func (k *KubeClient) Data(ctx context.Context, plural, ns, name string) (map[string]string, error) {
	b, err := k.do(ctx, http.MethodGet, "/api/v1/namespaces/"+ns+"/"+plural+"/"+name, nil, http.StatusOK)
	if err != nil {
		return nil, err
	}

	var obj struct {
		Data map[string]string `json:"data"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", plural, ns, name, err)
	}

	if plural == resSecrets.plural {
		for key, v := range obj.Data {
			plain, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				return nil, fmt.Errorf("secret %s/%s: data[%q]: %w", ns, name, key, err)
			}

			obj.Data[key] = string(plain)
		}
	}

	return obj.Data, nil
}

func (k *KubeClient) do(ctx context.Context, method, path string, body []byte, want int) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, k.Server+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}

	req.Header.Set("Content-Type", "application/json")

	resp, err := k.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()

	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}

	if resp.StatusCode != want {
		var st struct {
			Reason string `json:"reason"`
		}
		_ = json.Unmarshal(b, &st)

		return nil, &KubeAnswer{Code: resp.StatusCode, Reason: st.Reason}
	}

	return b, nil
}
