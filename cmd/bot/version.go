package main

import (
	"context"
	"flag"
	"runtime"

	"github.com/pocbot/pocbot/internal/provision/talos"
	"github.com/pocbot/pocbot/internal/settings"
	"github.com/pocbot/pocbot/internal/version"
)

func versionCommand() *command {
	return &command{
		name:    "version",
		summary: "print the bot's version, the Go version it was built with, and the Talos and Kubernetes versions it pins",
		run: func(_ context.Context, a *app, _ *flag.FlagSet) error {
			a.printf("pocbot %s\n", version.String())
			if rev := version.Revision(); rev != "" {
				a.printf("commit      %s\n", rev)
			}
			a.printf("go          %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
			a.printf("talos       %s (default; series up to %s)\n", settings.DefaultTalosVersion, settings.MaxTalosMinor)
			for _, tv := range []string{settings.DefaultTalosVersion, settings.MaxTalosMinor + ".0"} {
				if k, err := talos.DefaultKubernetesVersion(tv); err == nil {
					a.printf("kubernetes  %s (for talos %s)\n", k, tv[:len(settings.MaxTalosMinor)])
				}
			}
			a.printf("cilium      %s (%s)\n", talos.DefaultCiliumVersion, talos.CiliumAgentImage)
			return nil
		},
	}
}
