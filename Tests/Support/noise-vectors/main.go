// Command noise-vectors writes Noise_NK_25519_ChaChaPoly_BLAKE2s vectors made by an independent
// implementation, flynn/noise (Debian golang-github-flynn-noise-dev 1.0.0), as one JSON document on
// stdout. Tests/CryptoTests/Vectors/noise-nk-flynn.json is its output, checked in so the unit tests
// need no Go; regenerate with Tests/Support/noise-vectors/generate.sh.
//
// Every case runs a flynn initiator against a flynn responder with fixed ephemeral keys (fed through
// Config.Random), so the Swift initiator and responder, given the same keys, must produce the same
// bytes and open the other side's. The hostile cases record which first messages flynn's responder
// refuses.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"

	"github.com/flynn/noise"
)

type transportMessage struct {
	Plaintext  string `json:"plaintext"`
	Ciphertext string `json:"ciphertext"`
}

type handshakeCase struct {
	Name                      string             `json:"name"`
	Prologue                  string             `json:"prologue"`
	ResponderStaticPrivate    string             `json:"responderStaticPrivate"`
	ResponderStaticPublic     string             `json:"responderStaticPublic"`
	InitiatorEphemeralPrivate string             `json:"initiatorEphemeralPrivate"`
	ResponderEphemeralPrivate string             `json:"responderEphemeralPrivate"`
	InitiatorPayload          string             `json:"initiatorPayload"`
	ResponderPayload          string             `json:"responderPayload"`
	Message1                  string             `json:"message1"`
	Message2                  string             `json:"message2"`
	HandshakeHash             string             `json:"handshakeHash"`
	InitiatorToResponder      []transportMessage `json:"initiatorToResponder"`
	ResponderToInitiator      []transportMessage `json:"responderToInitiator"`
}

type refusedCase struct {
	Name                   string `json:"name"`
	Prologue               string `json:"prologue"`
	ResponderStaticPrivate string `json:"responderStaticPrivate"`
	Message1               string `json:"message1"`
	Error                  string `json:"error"`
}

type document struct {
	Generator string          `json:"generator"`
	Protocol  string          `json:"protocol"`
	Cases     []handshakeCase `json:"cases"`
	Refused   []refusedCase   `json:"refused"`
}

var suite = noise.NewCipherSuite(noise.DH25519, noise.CipherChaChaPoly, noise.HashBLAKE2s)

func sequence(first byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = first + byte(i)
	}
	return out
}

// derived gives reproducible bytes of any length from a label (SHA-256 in counter mode).
func derived(label string, n int) []byte {
	var out []byte
	for counter := 0; len(out) < n; counter++ {
		sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", label, counter)))
		out = append(out, sum[:]...)
	}
	return out[:n]
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "noise-vectors:", err)
		os.Exit(1)
	}
}

func keypair(private []byte) noise.DHKey {
	key, err := noise.DH25519.GenerateKeypair(bytes.NewReader(private))
	must(err)
	return key
}

func run(name string, prologue, staticPrivate, initiatorEphemeral, responderEphemeral, initiatorPayload, responderPayload []byte,
	toResponder, toInitiator [][]byte) handshakeCase {
	static := keypair(staticPrivate)
	initiator, err := noise.NewHandshakeState(noise.Config{CipherSuite: suite, Random: bytes.NewReader(initiatorEphemeral),
		Pattern: noise.HandshakeNK, Initiator: true, Prologue: prologue, PeerStatic: static.Public})
	must(err)
	responder, err := noise.NewHandshakeState(noise.Config{CipherSuite: suite, Random: bytes.NewReader(responderEphemeral),
		Pattern: noise.HandshakeNK, Initiator: false, Prologue: prologue, StaticKeypair: static})
	must(err)

	message1, _, _, err := initiator.WriteMessage(nil, initiatorPayload)
	must(err)
	read1, _, _, err := responder.ReadMessage(nil, message1)
	must(err)
	if !bytes.Equal(read1, initiatorPayload) {
		must(fmt.Errorf("%s: the responder read another first payload", name))
	}
	message2, responderToInitiator, initiatorToResponder, err := responder.WriteMessage(nil, responderPayload)
	must(err)
	read2, initiatorSend, initiatorReceive, err := initiator.ReadMessage(nil, message2)
	must(err)
	if !bytes.Equal(read2, responderPayload) {
		must(fmt.Errorf("%s: the initiator read another second payload", name))
	}
	if !bytes.Equal(initiator.ChannelBinding(), responder.ChannelBinding()) {
		must(fmt.Errorf("%s: the handshake hashes differ", name))
	}
	// flynn returns (cs1, cs2) from the responder's WriteMessage in Split order: cs1 is the
	// initiator's sending direction.
	c := handshakeCase{
		Name: name, Prologue: hex.EncodeToString(prologue),
		ResponderStaticPrivate: hex.EncodeToString(staticPrivate), ResponderStaticPublic: hex.EncodeToString(static.Public),
		InitiatorEphemeralPrivate: hex.EncodeToString(initiatorEphemeral), ResponderEphemeralPrivate: hex.EncodeToString(responderEphemeral),
		InitiatorPayload: hex.EncodeToString(initiatorPayload), ResponderPayload: hex.EncodeToString(responderPayload),
		Message1: hex.EncodeToString(message1), Message2: hex.EncodeToString(message2),
		HandshakeHash:        hex.EncodeToString(initiator.ChannelBinding()),
		InitiatorToResponder: []transportMessage{}, ResponderToInitiator: []transportMessage{},
	}
	for _, plaintext := range toResponder {
		sealed, err := initiatorSend.Encrypt(nil, nil, plaintext)
		must(err)
		opened, err := responderToInitiator.Decrypt(nil, nil, sealed)
		must(err)
		if !bytes.Equal(opened, plaintext) {
			must(fmt.Errorf("%s: a message to the responder did not round-trip", name))
		}
		c.InitiatorToResponder = append(c.InitiatorToResponder, transportMessage{hex.EncodeToString(plaintext), hex.EncodeToString(sealed)})
	}
	for _, plaintext := range toInitiator {
		sealed, err := initiatorToResponder.Encrypt(nil, nil, plaintext)
		must(err)
		opened, err := initiatorReceive.Decrypt(nil, nil, sealed)
		must(err)
		if !bytes.Equal(opened, plaintext) {
			must(fmt.Errorf("%s: a message to the initiator did not round-trip", name))
		}
		c.ResponderToInitiator = append(c.ResponderToInitiator, transportMessage{hex.EncodeToString(plaintext), hex.EncodeToString(sealed)})
	}
	return c
}

func refuse(name string, prologue, staticPrivate, message1 []byte) refusedCase {
	static := keypair(staticPrivate)
	responder, err := noise.NewHandshakeState(noise.Config{CipherSuite: suite, Pattern: noise.HandshakeNK, Initiator: false,
		Prologue: prologue, StaticKeypair: static})
	must(err)
	_, _, _, err = responder.ReadMessage(nil, message1)
	if err == nil {
		must(fmt.Errorf("%s: flynn's responder accepted it", name))
	}
	return refusedCase{Name: name, Prologue: hex.EncodeToString(prologue), ResponderStaticPrivate: hex.EncodeToString(staticPrivate),
		Message1: hex.EncodeToString(message1), Error: err.Error()}
}

func main() {
	dnsttPrologue := []byte("dnstt 2020-04-13")
	doc := document{
		Generator: "Tests/Support/noise-vectors (flynn/noise 1.0.0, Debian golang-github-flynn-noise-dev 1.0.0-2)",
		Protocol:  "Noise_NK_25519_ChaChaPoly_BLAKE2s",
	}
	// dnstt's handshake: its prologue, empty payloads, then an smux SYN and PSH "hello" for stream 3.
	doc.Cases = append(doc.Cases, run("dnstt", dnsttPrologue, sequence(0x01, 32), sequence(0x21, 32), sequence(0x41, 32), nil, nil,
		[][]byte{{0x02, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00}, append([]byte{0x02, 0x02, 0x05, 0x00, 0x03, 0x00, 0x00, 0x00}, "hello"...)},
		[][]byte{{0x02, 0x04, 0x08, 0x00, 0x03, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00}}))
	// No prologue, the payloads of the Noise test vectors' style.
	doc.Cases = append(doc.Cases, run("empty-prologue-with-payloads", nil, sequence(0x01, 32), sequence(0x20, 32), sequence(0x41, 32),
		[]byte("test_msg_0"), []byte("test_msg_1"),
		[][]byte{[]byte("yellowsubmarine"), {}}, [][]byte{[]byte("submarineyellow")}))
	// Derived keys, a long prologue, larger payloads and transport messages up to dnstt's 4096-byte chunks,
	// enough of them that the nonce's second byte is used.
	var toResponder, toInitiator [][]byte
	for i := 0; i < 260; i++ {
		toResponder = append(toResponder, derived(fmt.Sprintf("to-responder-%d", i), i%7))
	}
	toResponder = append(toResponder, derived("to-responder-4096", 4096), derived("to-responder-1000", 1000))
	toInitiator = append(toInitiator, derived("to-initiator-4096", 4096), []byte{}, derived("to-initiator-1", 1))
	doc.Cases = append(doc.Cases, run("derived-keys", derived("prologue", 300), derived("static", 32), derived("initiator-ephemeral", 32),
		derived("responder-ephemeral", 32), derived("initiator-payload", 1000), derived("responder-payload", 77), toResponder, toInitiator))

	// First messages flynn's responder refuses. Low-order points make an all-zero X25519 result.
	valid := doc.Cases[0]
	message1, _ := hex.DecodeString(valid.Message1)
	tampered := append([]byte{}, message1...)
	tampered[len(tampered)-1] ^= 0x01
	doc.Refused = append(doc.Refused,
		refuse("zero-ephemeral", dnsttPrologue, sequence(0x01, 32), append(make([]byte, 32), message1[32:]...)),
		refuse("order-8-ephemeral", dnsttPrologue, sequence(0x01, 32),
			append(mustHex("e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800"), message1[32:]...)),
		refuse("tampered-tag", dnsttPrologue, sequence(0x01, 32), tampered),
		refuse("other-prologue", []byte("dnstt 2020-04-14"), sequence(0x01, 32), message1),
		refuse("short", dnsttPrologue, sequence(0x01, 32), message1[:47]),
	)
	encoder := json.NewEncoder(os.Stdout)
	encoder.SetIndent("", "  ")
	must(encoder.Encode(doc))
}

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	must(err)
	return b
}
