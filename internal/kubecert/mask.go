package kubecert

import (
	"encoding/base64"
	"strings"

	"go.yaml.in/yaml/v4"
)

// MaskValues lists the values of a kubeconfig that are secrets, for ::add-mask::. Actions
// masks line by line, so masking the whole file would also mask generic lines such as `users:`
// and turn every log line holding them into `***`; only the credential values are registered:
// client key and certificate data, tokens, passwords (and the key's PEM body lines, in case it
// is ever printed decoded). An unparsable kubeconfig falls back to its long lines.
func MaskValues(kc []byte) []string {
	var doc any
	if err := yaml.Unmarshal(kc, &doc); err != nil {
		var out []string
		for _, l := range strings.Split(string(kc), "\n") {
			if l = strings.TrimSpace(l); len(l) >= 32 {
				out = append(out, l)
			}
		}
		return out
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				s, isString := x.(string)
				if !isString || s == "" {
					walk(x)
					continue
				}
				switch k {
				case "client-key-data", "client-certificate-data", "token", "password":
					out = append(out, s)
					if k == "client-key-data" {
						out = append(out, pemBodyLines(s)...)
					}
				}
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
	return out
}

func pemBodyLines(b64 string) []string {
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(string(raw), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "-----") {
			out = append(out, l)
		}
	}
	return out
}
