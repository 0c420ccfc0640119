package pki

import (
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WriteAdminKubeconfig writes a kubeconfig that reaches server (an https
// URL) with the admin client certificate and trusts the CA. It is derived
// from the certificates, so rewriting it loses nothing.
func WriteAdminKubeconfig(path string, f Files, server, name string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: f.CACert()}
	cfg.AuthInfos[name+"-admin"] = &clientcmdapi.AuthInfo{ClientCertificate: f.AdminCert(), ClientKey: f.AdminKey()}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name + "-admin"}
	cfg.CurrentContext = name
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("writing admin kubeconfig %s: %w", path, err)
	}
	return nil
}
