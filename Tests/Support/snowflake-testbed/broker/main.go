// Test-bed snowflake broker: matches client offers with polling proxies, like snowflake's
// broker/ but without metrics, geoip, SQS or NAT-type matching. Message codecs are upstream's
// (Debian's golang-snowflake-dev common/messages and common/amp), so what a client sends and
// reads is checked by the real decoders and encoders.
//
// Routes (relative to the broker URL, which must end in "/"):
//
//	POST /client        client poll: "1.0\n" + JSON (ClientPollRequest), or the legacy form (a raw
//	                    JSON offer starting with "{", NAT type in the Snowflake-NAT-Type header,
//	                    answer as the raw body, 503 = no proxies, 504 = timed out)
//	GET  /amp/client/P  the same poll through the AMP-cache form: P = amp.EncodePath(request),
//	                    response in AMP armor (text/html)
//	POST /proxy         proxy poll (ProxyPollRequest 1.x); held up to 10 s waiting for a client
//	POST /answer        proxy answer (ProxyAnswerRequest)
//
// The bridge list (-bridge FINGERPRINT=RELAY_URL, repeatable) maps the client's fingerprint to
// the WebSocket relay URL handed to the proxy; an unknown fingerprint is an error, as upstream.
// As upstream: a client is answered at once with "no snowflake proxies currently available"
// when no proxy is waiting, and waits at most 10 s for the proxy's answer.
//
// With -tls-listen/-tls-cert/-tls-key it serves the same routes over HTTPS as well, so that
// clients' TLS (SNI, certificate checks, domain fronting) can be tested against it.
//
// Deliberate difference: NAT types are not matched (upstream pairs restricted/unknown clients
// only with unrestricted proxies); on loopback every party reports "unknown".
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"git.torproject.org/pluggable-transports/snowflake.git/v2/common/amp"
	"git.torproject.org/pluggable-transports/snowflake.git/v2/common/messages"
	"git.torproject.org/pluggable-transports/snowflake.git/v2/common/namematcher"
)

const (
	readLimit     = 100000
	proxyTimeout  = 10 * time.Second // how long a proxy poll is held
	clientTimeout = 10 * time.Second // how long a client waits for the proxy's answer
)

type bridgeList map[string]string // upper-case hex fingerprint -> relay URL

func (b bridgeList) String() string { return fmt.Sprint(map[string]string(b)) }
func (b bridgeList) Set(v string) error {
	i := strings.IndexByte(v, '=')
	if i <= 0 {
		return fmt.Errorf("want FINGERPRINT=RELAY_URL, got %q", v)
	}
	b[strings.ToUpper(v[:i])] = v[i+1:]
	return nil
}

// A client offer handed to a waiting proxy.
type offer struct {
	sdp      string
	nat      string
	relayURL string
	answer   chan string // buffered(1): the proxy's answer
}

type waitingProxy struct {
	sid     string
	matcher namematcher.NameMatcher
	offers  chan *offer // buffered(1)
}

type broker struct {
	bridges bridgeList

	mu      sync.Mutex
	waiting []*waitingProxy   // proxies holding a poll, oldest first
	pending map[string]*offer // sid -> offer awaiting /answer

	stats struct {
		sync.Mutex
		clients, matched, noProxy, timedOut, proxyPolls, answers int
	}
}

func (b *broker) count(f func()) { b.stats.Lock(); f(); b.stats.Unlock() }

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return io.ReadAll(http.MaxBytesReader(w, r.Body, readLimit))
}

// takeProxy removes and returns the oldest waiting proxy that accepts relayURL's host.
func (b *broker) takeProxy(relayURL string) *waitingProxy {
	host := relayURL
	if u, err := url.Parse(relayURL); err == nil {
		host = u.Hostname()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, p := range b.waiting {
		if p.matcher.IsMember(host) {
			b.waiting = append(b.waiting[:i:i], b.waiting[i+1:]...)
			return p
		}
	}
	return nil
}

// clientOffer runs one rendezvous and returns the encoded ClientPollResponse.
func (b *broker) clientOffer(body []byte) []byte {
	b.count(func() { b.stats.clients++ })
	respond := func(resp messages.ClientPollResponse) []byte {
		out, err := resp.EncodePollResponse()
		if err != nil {
			log.Printf("encode poll response: %v", err)
		}
		return out
	}
	req, err := messages.DecodeClientPollRequest(body)
	if err != nil {
		return respond(messages.ClientPollResponse{Error: err.Error()})
	}
	relayURL, ok := b.bridges[strings.ToUpper(req.Fingerprint)]
	if !ok {
		return respond(messages.ClientPollResponse{Error: "unknown bridge fingerprint"})
	}
	proxy := b.takeProxy(relayURL)
	if proxy == nil {
		b.count(func() { b.stats.noProxy++ })
		return respond(messages.ClientPollResponse{Error: messages.StrNoProxies})
	}
	o := &offer{sdp: req.Offer, nat: req.NAT, relayURL: relayURL, answer: make(chan string, 1)}
	proxy.offers <- o
	select {
	case answer := <-o.answer:
		b.count(func() { b.stats.matched++ })
		log.Printf("client matched with proxy %s", proxy.sid)
		return respond(messages.ClientPollResponse{Answer: answer})
	case <-time.After(clientTimeout):
		b.mu.Lock()
		delete(b.pending, proxy.sid)
		b.mu.Unlock()
		b.count(func() { b.stats.timedOut++ })
		return respond(messages.ClientPollResponse{Error: messages.StrTimedOut})
	}
}

func (b *broker) handleClient(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	legacy := len(body) > 0 && body[0] == '{'
	if legacy {
		req := messages.ClientPollRequest{Offer: string(body), NAT: r.Header.Get("Snowflake-NAT-Type")}
		if body, err = req.EncodeClientPollRequest(); err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
	}
	out := b.clientOffer(body)
	if legacy {
		resp, err := messages.DecodeClientPollResponse(out)
		switch {
		case err != nil:
			w.WriteHeader(http.StatusInternalServerError)
			return
		case resp.Error == "":
			out = []byte(resp.Answer)
		case resp.Error == messages.StrNoProxies:
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		case resp.Error == messages.StrTimedOut:
			w.WriteHeader(http.StatusGatewayTimeout)
			return
		default:
			w.WriteHeader(http.StatusBadRequest)
			return
		}
	}
	w.Write(out)
}

func (b *broker) handleAMPClient(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	path := strings.TrimPrefix(r.URL.EscapedPath(), "/amp/client/")
	body, err := amp.DecodePath(path)
	var out []byte
	if err != nil {
		resp := messages.ClientPollResponse{Error: err.Error()}
		out, _ = resp.EncodePollResponse()
	} else {
		out = b.clientOffer(body)
	}
	w.Header().Set("Content-Type", "text/html")
	enc, err := amp.NewArmorEncoder(w)
	if err != nil {
		return
	}
	enc.Write(out)
	enc.Close()
}

func (b *broker) handleProxy(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	if err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	sid, _, _, _, pattern, _, err := messages.DecodeProxyPollRequestWithRelayPrefix(body)
	if err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	b.count(func() { b.stats.proxyPolls++ })
	if pattern == "" {
		pattern = "$"
	}
	p := &waitingProxy{sid: sid, matcher: namematcher.NewNameMatcher(pattern), offers: make(chan *offer, 1)}
	b.mu.Lock()
	b.waiting = append(b.waiting, p)
	b.mu.Unlock()

	var o *offer
	select {
	case o = <-p.offers:
	case <-time.After(proxyTimeout):
		b.mu.Lock()
		for i, q := range b.waiting {
			if q == p {
				b.waiting = append(b.waiting[:i:i], b.waiting[i+1:]...)
				break
			}
		}
		b.mu.Unlock()
		// A client may have taken this proxy just before the timeout.
		select {
		case o = <-p.offers:
		default:
		}
	}
	var out []byte
	if o == nil {
		out, _ = messages.EncodePollResponse("", false, "")
	} else {
		b.mu.Lock()
		b.pending[sid] = o
		b.mu.Unlock()
		out, _ = messages.EncodePollResponseWithRelayURL(o.sdp, true, o.nat, o.relayURL, "")
	}
	w.Write(out)
}

func (b *broker) handleAnswer(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	if err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	answer, sid, err := messages.DecodeAnswerRequest(body)
	if err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	b.count(func() { b.stats.answers++ })
	b.mu.Lock()
	o := b.pending[sid]
	delete(b.pending, sid)
	b.mu.Unlock()
	success := o != nil
	if success {
		o.answer <- answer
	}
	out, _ := messages.EncodeAnswerResponse(success)
	w.Write(out)
}

func (b *broker) logStats() {
	b.stats.Lock()
	defer b.stats.Unlock()
	log.Printf("stats: client polls %d, matched %d, no proxy %d, timed out %d; proxy polls %d, answers %d",
		b.stats.clients, b.stats.matched, b.stats.noProxy, b.stats.timedOut, b.stats.proxyPolls, b.stats.answers)
}

func main() {
	listen := flag.String("listen", "127.0.5.1:8080", "address of the HTTP listener")
	tlsListen := flag.String("tls-listen", "", "address of an additional HTTPS listener")
	tlsCert := flag.String("tls-cert", "", "PEM certificate (chain) for -tls-listen")
	tlsKey := flag.String("tls-key", "", "PEM private key for -tls-listen")
	b := &broker{bridges: bridgeList{}, pending: map[string]*offer{}}
	flag.Var(b.bridges, "bridge", "FINGERPRINT=RELAY_URL (repeatable)")
	flag.Parse()
	if len(b.bridges) == 0 {
		log.Fatal("at least one -bridge FINGERPRINT=RELAY_URL is required")
	}
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)

	mux := http.NewServeMux()
	mux.HandleFunc("/client", b.handleClient)
	mux.HandleFunc("/amp/client/", b.handleAMPClient)
	mux.HandleFunc("/proxy", b.handleProxy)
	mux.HandleFunc("/answer", b.handleAnswer)
	mux.HandleFunc("/debug", func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		n := len(b.waiting)
		b.mu.Unlock()
		fmt.Fprintf(w, "waiting proxies %d\n", n)
	})

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("listen %s: %v", *listen, err)
	}
	log.Printf("snowflake test broker on http://%s/, bridges %v", *listen, b.bridges)
	server := &http.Server{Handler: mux}
	var tlsServer *http.Server
	if *tlsListen != "" {
		tlsLn, err := net.Listen("tcp", *tlsListen)
		if err != nil {
			log.Fatalf("listen %s: %v", *tlsListen, err)
		}
		tlsServer = &http.Server{Handler: mux}
		go func() {
			if err := tlsServer.ServeTLS(tlsLn, *tlsCert, *tlsKey); err != nil && err != http.ErrServerClosed {
				log.Fatalf("serve TLS: %v", err)
			}
		}()
		log.Printf("also on https://%s/", *tlsListen)
	}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1)
		for s := range sig {
			b.logStats()
			if s != syscall.SIGUSR1 {
				if tlsServer != nil {
					tlsServer.Close()
				}
				server.Close()
				return
			}
		}
	}()
	if err := server.Serve(ln); err != nil && err != http.ErrServerClosed {
		log.Fatalf("serve: %v", err)
	}
}
