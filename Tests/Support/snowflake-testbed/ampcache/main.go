// Test-bed AMP cache: a small stand-in for an AMP cache (cdn.ampproject.org) in front of the
// test broker, so that the snowflake AMP-cache rendezvous can be tested end to end on loopback.
//
// It serves AMP cache URLs as the AMP project documents them ("AMP cache URL format") and as
// snowflake's client builds them (upstream common/amp.CacheURL, Debian's golang-snowflake-dev):
//
//	GET http(s)://PREFIX.CACHEHOST/c/[s/]PUBLISHERHOST/PATH
//
// and fetches http(s)://PUBLISHERHOST/PATH from the origin mapped to PUBLISHERHOST (-origin
// HOST=BASEURL, e.g. snowflake-broker.test=http://127.0.5.1:8080). A request is served only if
// its Host header and path are exactly what upstream's amp.CacheURL computes for that publisher
// URL and -cache-url, so a client with a wrong domain prefix or path is refused (404), as a real
// cache would not find the page either. Like a real cache it allows only GET, turns an origin
// error into 404, and answers a page that is not AMP HTML with a "silent redirect" (200, a
// Location header and no content), which snowflake clients must treat as an error.
//
// Every request is logged ("served ..." or "refused ..."), so tests can tell that a rendezvous
// went through the cache.
package main

import (
	"bytes"
	"crypto/tls"
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
	"sync/atomic"
	"syscall"
	"time"

	"git.torproject.org/pluggable-transports/snowflake.git/v2/common/amp"
)

const readLimit = 100000

type origins map[string]string // publisher host -> origin base URL (no trailing slash)

func (o origins) String() string { return fmt.Sprint(map[string]string(o)) }
func (o origins) Set(v string) error {
	i := strings.IndexByte(v, '=')
	if i <= 0 {
		return fmt.Errorf("want HOST=BASEURL, got %q", v)
	}
	o[strings.ToLower(v[:i])] = strings.TrimSuffix(v[i+1:], "/")
	return nil
}

type cache struct {
	cacheURL *url.URL
	origins  origins
	client   *http.Client
	served   int64
	refused  int64
}

func (c *cache) refuse(w http.ResponseWriter, r *http.Request, status int, why string) {
	atomic.AddInt64(&c.refused, 1)
	log.Printf("refused %s %s (Host %s): %s", r.Method, r.URL.EscapedPath(), r.Host, why)
	w.WriteHeader(status)
}

func (c *cache) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		c.refuse(w, r, http.StatusMethodNotAllowed, "AMP caches serve GET only")
		return
	}
	// /c/[s/]HOST/REST
	rawPath := r.URL.EscapedPath()
	rest := strings.TrimPrefix(rawPath, c.cacheURL.EscapedPath())
	rest = strings.TrimPrefix(rest, "/")
	scheme := "http"
	if !strings.HasPrefix(rest, "c/") {
		c.refuse(w, r, http.StatusNotFound, "not a content (c) URL")
		return
	}
	rest = strings.TrimPrefix(rest, "c/")
	if strings.HasPrefix(rest, "s/") {
		scheme = "https"
		rest = strings.TrimPrefix(rest, "s/")
	}
	slash := strings.IndexByte(rest, '/')
	if slash <= 0 {
		c.refuse(w, r, http.StatusNotFound, "no publisher host")
		return
	}
	host, pubPath := strings.ToLower(rest[:slash]), rest[slash:]
	origin, ok := c.origins[host]
	if !ok {
		c.refuse(w, r, http.StatusNotFound, "unknown publisher host")
		return
	}
	pub, err := url.Parse(scheme + "://" + host + pubPath)
	if err != nil {
		c.refuse(w, r, http.StatusNotFound, "bad publisher URL")
		return
	}
	want, err := amp.CacheURL(pub, c.cacheURL, "c")
	if err != nil {
		c.refuse(w, r, http.StatusNotFound, "amp.CacheURL: "+err.Error())
		return
	}
	if !strings.EqualFold(want.Host, r.Host) || want.EscapedPath() != rawPath {
		c.refuse(w, r, http.StatusNotFound, fmt.Sprintf("not the AMP cache URL of its publisher URL (want Host %s, path %s)", want.Host, want.EscapedPath()))
		return
	}
	resp, err := c.client.Get(origin + pubPath)
	if err != nil {
		c.refuse(w, r, http.StatusBadGateway, "origin: "+err.Error())
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, readLimit+1))
	if err != nil || len(body) > readLimit {
		c.refuse(w, r, http.StatusNotFound, "origin body unreadable or too large")
		return
	}
	if resp.StatusCode != http.StatusOK {
		c.refuse(w, r, http.StatusNotFound, fmt.Sprintf("origin status %d", resp.StatusCode))
		return
	}
	if !bytes.HasPrefix(bytes.ToLower(bytes.TrimSpace(body)), []byte("<!doctype html>")) || !bytes.Contains(body, []byte("<html amp")) {
		// What Google's cache does with invalid AMP: 200, Location to the origin, a script redirect.
		atomic.AddInt64(&c.refused, 1)
		log.Printf("silent redirect %s: the origin's page is not AMP HTML", rawPath)
		w.Header().Set("Location", pub.String())
		w.WriteHeader(http.StatusOK)
		return
	}
	atomic.AddInt64(&c.served, 1)
	log.Printf("served %s://%s%s from origin %s (%d bytes)", scheme, host, pubPath[:min(len(pubPath), 24)]+"...", origin, len(body))
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.Write(body)
}

func min(a, b int) int {
	if a < b {
		return a
	}
	return b
}

func main() {
	listen := flag.String("listen", "", "address of the HTTP listener")
	tlsListen := flag.String("tls-listen", "", "address of the HTTPS listener")
	tlsCert := flag.String("tls-cert", "", "PEM certificate for -tls-listen")
	tlsKey := flag.String("tls-key", "", "PEM private key for -tls-listen")
	cacheURLText := flag.String("cache-url", "https://amp-cache.test/", "the cache URL clients are given (ampcache=)")
	c := &cache{origins: origins{}}
	flag.Var(c.origins, "origin", "PUBLISHERHOST=BASEURL (repeatable)")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	var err error
	if c.cacheURL, err = url.Parse(*cacheURLText); err != nil {
		log.Fatalf("-cache-url: %v", err)
	}
	if len(c.origins) == 0 || (*listen == "" && *tlsListen == "") {
		log.Fatal("need at least one -origin and -listen or -tls-listen")
	}
	// The broker holds a client poll up to 10 s; the origin fetch must outlast that.
	c.client = &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{}},
		// A cache does not follow the origin's redirects for the client.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	var servers []*http.Server
	serve := func(addr string, tlsOn bool) {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			log.Fatalf("listen %s: %v", addr, err)
		}
		s := &http.Server{Handler: c}
		servers = append(servers, s)
		go func() {
			var err error
			if tlsOn {
				err = s.ServeTLS(ln, *tlsCert, *tlsKey)
			} else {
				err = s.Serve(ln)
			}
			if err != nil && err != http.ErrServerClosed {
				log.Fatalf("serve %s: %v", addr, err)
			}
		}()
		log.Printf("AMP cache %s on %s (tls %v), origins %v", c.cacheURL, addr, tlsOn, c.origins)
	}
	if *listen != "" {
		serve(*listen, false)
	}
	if *tlsListen != "" {
		serve(*tlsListen, true)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	log.Printf("stats: served %d, refused %d", atomic.LoadInt64(&c.served), atomic.LoadInt64(&c.refused))
	for _, s := range servers {
		s.Close()
	}
}
