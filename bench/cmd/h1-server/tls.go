package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"time"

	nbtls "github.com/lesismal/llib/std/crypto/tls"
)

// testCert returns a self-signed ECDSA P-256 certificate for 127.0.0.1
// and localhost, as PEM (the clients of the benchmark do not verify it).
func testCert() (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "localhost"},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), nil
}

// tlsConfigs returns the certificate's crypto/tls config and nbio's (its
// fork of crypto/tls), HTTP/1.1 only (ALPN http/1.1), as the benchmark's
// clients speak it.
func tlsConfigs() (*tls.Config, *nbtls.Config, error) {
	c, k, err := testCert()
	if err != nil {
		return nil, nil, err
	}
	cert, err := tls.X509KeyPair(c, k)
	if err != nil {
		return nil, nil, err
	}
	nbcert, err := nbtls.X509KeyPair(c, k)
	if err != nil {
		return nil, nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}},
		&nbtls.Config{Certificates: []nbtls.Certificate{nbcert}, NextProtos: []string{"http/1.1"}}, nil
}
