package redisproc

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"time"
)

// TLSFiles are the paths of the PEM files redis-server reads for its TLS
// port: tls-ca-cert-file, tls-cert-file and tls-key-file.
type TLSFiles struct {
	CACert, Cert, Key string
}

// WriteTLSFiles makes a throwaway CA and a server certificate it signs, for
// 127.0.0.1 and localhost, writes them to dir as ca.crt, server.crt and
// server.key, readable by everyone (a server in a container may run as
// another user; the key protects nothing beyond one test), and returns
// their paths and a client configuration that trusts the CA. WithTLS uses
// it; a server started some other way, in a container say, can too. A
// fresh CA per server means that no client can come to depend on a
// certificate made for another server.
func WriteTLSFiles(dir string) (TLSFiles, *tls.Config, error) {
	// The window starts in the past so that a clock slightly behind the
	// one that signed does not reject the certificates as not yet valid.
	notBefore := time.Now().Add(-time.Hour)
	notAfter := time.Now().Add(24 * time.Hour)

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return TLSFiles{}, nil, err
	}
	// SerialNumber is left nil: CreateCertificate then picks a random one.
	caTemplate := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "redisproc CA"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return TLSFiles{}, nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return TLSFiles{}, nil, err
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return TLSFiles{}, nil, err
	}
	template := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "localhost"},
		NotBefore:   notBefore,
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		// Both names a client may dial: the address the server binds,
		// and the host name a URL may use.
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:    []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca, &key.PublicKey, caKey)
	if err != nil {
		return TLSFiles{}, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return TLSFiles{}, nil, err
	}

	files := TLSFiles{
		CACert: filepath.Join(dir, "ca.crt"),
		Cert:   filepath.Join(dir, "server.crt"),
		Key:    filepath.Join(dir, "server.key"),
	}
	if err := writePEM(files.CACert, "CERTIFICATE", caDER); err != nil {
		return TLSFiles{}, nil, err
	}
	if err := writePEM(files.Cert, "CERTIFICATE", der); err != nil {
		return TLSFiles{}, nil, err
	}
	if err := writePEM(files.Key, "PRIVATE KEY", keyDER); err != nil {
		return TLSFiles{}, nil, err
	}

	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return files, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

func writePEM(path, blockType string, der []byte) error {
	data := pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der})
	return os.WriteFile(path, data, 0o644)
}
