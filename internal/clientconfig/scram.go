package clientconfig

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"hash"

	"github.com/segmentio/kafka-go/sasl"
	"github.com/xdg-go/scram"
)

// scramMechanism is SASL SCRAM-SHA-256 or SCRAM-SHA-512 as Kafka's own clients speak it: the
// salted password is derived from the password's UTF-8 bytes as they are, without SASLprep
// (RFC 4013), as Kafka's ScramFormatter.normalize and kafka-configs.sh do. kafka-go's scram
// package applies SASLprep, which changes some passwords (a no-break space becomes a space,
// NFKC folds others), so the broker would refuse them, and refuses others (control
// characters, U+FFFD, non-characters) with an error that quotes the password.
type scramMechanism struct {
	name   string
	client *scram.Client
}

func newSCRAM(name, username, password string) (sasl.Mechanism, error) {
	gen := scram.HashGeneratorFcn(func() hash.Hash { return sha256.New() })
	if name == "SCRAM-SHA-512" {
		gen = func() hash.Hash { return sha512.New() }
	}
	// The username is still escaped for the SCRAM message (= and , as =3D and =2C), as Kafka's
	// ScramFormatter.username does; only the normalization is left out.
	client, err := gen.NewClientUnprepped(username, password, "")
	if err != nil {
		// Not the library's text, which may quote the credentials.
		return nil, errors.New("configure SASL " + name + ": the SCRAM client refused the username or password")
	}
	return &scramMechanism{name: name, client: client}, nil
}

func (m *scramMechanism) Name() string { return m.name }

func (m *scramMechanism) Start(context.Context) (sasl.StateMachine, []byte, error) {
	conv := m.client.NewConversation()
	first, err := conv.Step("")
	if err != nil {
		return nil, nil, err
	}
	return &scramSession{conv: conv}, []byte(first), nil
}

type scramSession struct {
	conv *scram.ClientConversation
}

func (s *scramSession) Next(_ context.Context, challenge []byte) (bool, []byte, error) {
	resp, err := s.conv.Step(string(challenge))
	return s.conv.Done(), []byte(resp), err
}
