package clientconfig

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"hash"
)

// Encrypted private keys: ssl.key.password decrypts a PEM "ENCRYPTED PRIVATE KEY" (PKCS#8
// EncryptedPrivateKeyInfo, RFC 5958) as Kafka's PEM keystore does. The standard library reads
// only unencrypted keys, so the PBES2 scheme (RFC 8018) that `openssl pkcs8 -topk8` writes by
// default is decoded here: PBKDF2 with HMAC-SHA1/-SHA256/-SHA512 and AES-CBC. Older PBES1
// schemes are refused by name.

var (
	oidPBES2      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidHMACSHA1   = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACSHA256 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidHMACSHA512 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 11}
	oidAES128CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
)

type encryptedPrivateKeyInfo struct {
	Algorithm     pkix.AlgorithmIdentifier
	EncryptedData []byte
}

type pbes2Params struct {
	KeyDerivationFunc pkix.AlgorithmIdentifier
	EncryptionScheme  pkix.AlgorithmIdentifier
}

type pbkdf2Params struct {
	Salt           []byte
	IterationCount int
	KeyLength      int                      `asn1:"optional"`
	PRF            pkix.AlgorithmIdentifier `asn1:"optional"`
}

// decryptKeyPEM returns keyPEM with its "ENCRYPTED PRIVATE KEY" block decrypted to a
// "PRIVATE KEY" block with password. Without such a block it returns keyPEM as it is, and a
// password given for a key that is not encrypted is refused (Kafka would fail on it too).
func decryptKeyPEM(keyPEM []byte, password string) ([]byte, error) {
	rest := keyPEM
	var out bytes.Buffer
	found := false
	for {
		block, r := pem.Decode(rest)
		if block == nil {
			break
		}
		rest = r
		if block.Type != "ENCRYPTED PRIVATE KEY" {
			_ = pem.Encode(&out, block)
			continue
		}
		found = true
		if password == "" {
			return nil, errors.New("the private key is encrypted: set ssl.key.password")
		}
		der, err := decryptPKCS8(block.Bytes, []byte(password))
		if err != nil {
			return nil, err
		}
		_ = pem.Encode(&out, &pem.Block{Type: "PRIVATE KEY", Bytes: der})
	}
	if !found {
		if password != "" {
			return nil, errors.New("ssl.key.password is set but the private key is not encrypted (PEM \"ENCRYPTED PRIVATE KEY\"): remove ssl.key.password")
		}
		return keyPEM, nil
	}
	return out.Bytes(), nil
}

// decryptPKCS8 decrypts an EncryptedPrivateKeyInfo to the DER of its PrivateKeyInfo.
func decryptPKCS8(der, password []byte) ([]byte, error) {
	var info encryptedPrivateKeyInfo
	if _, err := asn1.Unmarshal(der, &info); err != nil {
		return nil, fmt.Errorf("read encrypted private key: %w", err)
	}
	if !info.Algorithm.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("encrypted private key scheme %s not supported: re-encrypt it with PBES2 (openssl pkcs8 -topk8 -v2 aes-256-cbc) or decrypt it (openssl pkcs8 -in key.pem -out key-plain.pem)", info.Algorithm.Algorithm)
	}
	var params pbes2Params
	if _, err := asn1.Unmarshal(info.Algorithm.Parameters.FullBytes, &params); err != nil {
		return nil, fmt.Errorf("read encrypted private key's PBES2 parameters: %w", err)
	}
	if !params.KeyDerivationFunc.Algorithm.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("encrypted private key: key derivation %s not supported (want PBKDF2)", params.KeyDerivationFunc.Algorithm)
	}
	var kdf pbkdf2Params
	if _, err := asn1.Unmarshal(params.KeyDerivationFunc.Parameters.FullBytes, &kdf); err != nil {
		return nil, fmt.Errorf("read encrypted private key's PBKDF2 parameters: %w", err)
	}
	var prf func() hash.Hash
	switch a := kdf.PRF.Algorithm; {
	case len(a) == 0 || a.Equal(oidHMACSHA1):
		prf = sha1.New
	case a.Equal(oidHMACSHA256):
		prf = sha256.New
	case a.Equal(oidHMACSHA512):
		prf = sha512.New
	default:
		return nil, fmt.Errorf("encrypted private key: PBKDF2 function %s not supported", a)
	}
	var keyLen int
	switch a := params.EncryptionScheme.Algorithm; {
	case a.Equal(oidAES128CBC):
		keyLen = 16
	case a.Equal(oidAES192CBC):
		keyLen = 24
	case a.Equal(oidAES256CBC):
		keyLen = 32
	default:
		return nil, fmt.Errorf("encrypted private key: cipher %s not supported (want AES-CBC)", a)
	}
	var iv []byte
	if _, err := asn1.Unmarshal(params.EncryptionScheme.Parameters.FullBytes, &iv); err != nil || len(iv) != aes.BlockSize {
		return nil, errors.New("encrypted private key: malformed AES-CBC parameters")
	}
	if kdf.IterationCount < 1 || kdf.IterationCount > 10_000_000 {
		return nil, fmt.Errorf("encrypted private key: PBKDF2 iteration count %d out of range", kdf.IterationCount)
	}
	key, err := pbkdf2.Key(prf, string(password), kdf.Salt, kdf.IterationCount, keyLen)
	if err != nil {
		return nil, fmt.Errorf("encrypted private key: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("encrypted private key: %w", err)
	}
	data := info.EncryptedData
	if len(data) == 0 || len(data)%aes.BlockSize != 0 {
		return nil, errors.New("encrypted private key: malformed encrypted data")
	}
	plain := make([]byte, len(data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(plain, data)
	// PKCS#7 padding; a wrong password shows as bad padding or a key that does not parse.
	n := int(plain[len(plain)-1])
	if n < 1 || n > aes.BlockSize || !bytes.Equal(plain[len(plain)-n:], bytes.Repeat([]byte{byte(n)}, n)) {
		return nil, errors.New("decrypt private key: wrong ssl.key.password")
	}
	plain = plain[:len(plain)-n]
	var probe asn1.RawValue
	if _, err := asn1.Unmarshal(plain, &probe); err != nil {
		return nil, errors.New("decrypt private key: wrong ssl.key.password")
	}
	return plain, nil
}
