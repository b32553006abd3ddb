// v6gate-quicpeer: both ends of a QUIC bulk transfer for area plpmtud (RFC 8899 datagram PLPMTUD, RFC 9000 §14).
//
// The application protocol is the QUIC interop runner's "hq-interop" (HTTP/0.9 over QUIC): the client opens one
// bidirectional stream, sends "GET /<path>\r\n" and reads the answer until the stream ends.  The server answers
// "/<N>" with N octets.  quic-go's DPLPMTUD (mtu_discoverer.go) probes the path with PING+PADDING packets; the
// server's -settings file ("dplpmtud off") turns it off for the connections accepted after it was written (the
// lab fault "probing off"); the client's -no-dplpmtud does the same on its side.
//
//	v6gate-quicpeer server -listen [::]:4433 [-alpn hq-interop] [-settings FILE]
//	v6gate-quicpeer client -connect [ADDR]:PORT -path /1048576 [-alpn hq-interop] [-local ADDR] [-timeout 20s]
//
// The client prints one JSON line: {"received": N, "complete": bool, "seconds": S, "error": "..."}.
package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/quic-go/quic-go"
)

const maxBody = 1 << 30 // the largest answer the server gives (1 GiB)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: v6gate-quicpeer server|client [flags]")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "server":
		os.Exit(server(os.Args[2:]))
	case "client":
		os.Exit(client(os.Args[2:]))
	default:
		fmt.Fprintf(os.Stderr, "v6gate-quicpeer: unknown mode %q (server or client)\n", os.Args[1])
		os.Exit(2)
	}
}

// selfSigned is the server's certificate: the checks judge packet sizes, not the PKI.
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "v6gate-quicpeer"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), DNSNames: []string{"dut"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// probingOff reads the settings file: a line "dplpmtud off" turns DPLPMTUD off.
func probingOff(path string) bool {
	if path == "" {
		return false
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "dplpmtud" && f[1] == "off" {
			return true
		}
	}
	return false
}

func server(args []string) int {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	listen := fs.String("listen", "[::]:4433", "UDP address to listen on")
	alpn := fs.String("alpn", "hq-interop", "ALPN protocol")
	settings := fs.String("settings", "", "file read at each new connection: 'dplpmtud off' disables DPLPMTUD")
	if fs.Parse(args) != nil {
		return 2
	}
	cert, err := selfSigned()
	if err != nil {
		fmt.Fprintln(os.Stderr, "v6gate-quicpeer: certificate:", err)
		return 1
	}
	base := &quic.Config{MaxIdleTimeout: 30 * time.Second}
	base.GetConfigForClient = func(*quic.ClientInfo) (*quic.Config, error) {
		c := base.Clone()
		c.GetConfigForClient = nil
		c.DisablePathMTUDiscovery = probingOff(*settings)
		fmt.Fprintf(os.Stderr, "v6gate-quicpeer: new connection, DPLPMTUD %s\n",
			map[bool]string{true: "off", false: "on"}[c.DisablePathMTUDiscovery])
		return c, nil
	}
	ln, err := quic.ListenAddr(*listen, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{*alpn}}, base)
	if err != nil {
		fmt.Fprintln(os.Stderr, "v6gate-quicpeer: listen:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "v6gate-quicpeer: listening on %s (ALPN %s)\n", ln.Addr(), *alpn)
	for {
		conn, err := ln.Accept(context.Background())
		if err != nil {
			fmt.Fprintln(os.Stderr, "v6gate-quicpeer: accept:", err)
			return 1
		}
		go serve(conn)
	}
}

func serve(conn *quic.Conn) {
	for {
		str, err := conn.AcceptStream(context.Background())
		if err != nil {
			return
		}
		go func() {
			defer str.Close()
			line, err := bufio.NewReaderSize(io.LimitReader(str, 4096), 4096).ReadString('\n')
			if err != nil && line == "" {
				str.CancelWrite(1)
				return
			}
			f := strings.Fields(line)
			if len(f) != 2 || f[0] != "GET" || !strings.HasPrefix(f[1], "/") {
				str.CancelWrite(1)
				return
			}
			n, err := strconv.ParseInt(strings.TrimPrefix(f[1], "/"), 10, 64)
			if err != nil || n < 0 || n > maxBody {
				str.CancelWrite(1)
				return
			}
			chunk := make([]byte, 64<<10)
			for i := range chunk {
				chunk[i] = byte('a' + i%26)
			}
			for n > 0 {
				k := int64(len(chunk))
				if n < k {
					k = n
				}
				if _, err := str.Write(chunk[:k]); err != nil {
					return
				}
				n -= k
			}
		}()
	}
}

type answer struct {
	Received int64   `json:"received"`
	Complete bool    `json:"complete"`
	Seconds  float64 `json:"seconds"`
	Error    string  `json:"error,omitempty"`
	Bench    bool    `json:"bench_error,omitempty"` // the client could not run at all (not the DUT's doing)
}

func client(args []string) int {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	connect := fs.String("connect", "", "the server's [ADDRESS]:PORT")
	alpn := fs.String("alpn", "hq-interop", "ALPN protocol")
	path := fs.String("path", "/1048576", "the request's path")
	local := fs.String("local", "", "source address")
	expect := fs.Int64("expect", -1, "octets the answer must hold (-1: the number in the path)")
	timeout := fs.Duration("timeout", 20*time.Second, "time limit for the whole exchange")
	noPMTUD := fs.Bool("no-dplpmtud", true, "disable the client's own DPLPMTUD")
	if fs.Parse(args) != nil || *connect == "" {
		return 2
	}
	out := json.NewEncoder(os.Stdout)
	want := *expect
	if want < 0 {
		v, err := strconv.ParseInt(strings.TrimPrefix(*path, "/"), 10, 64)
		if err != nil {
			want = -1
		} else {
			want = v
		}
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	res := answer{}
	finish := func(err error) int {
		res.Seconds = time.Since(start).Seconds()
		if err != nil && !res.Complete {
			res.Error = err.Error()
		}
		_ = out.Encode(res)
		return 0
	}
	laddr := &net.UDPAddr{IP: net.IPv6unspecified}
	if *local != "" {
		ip := net.ParseIP(*local)
		if ip == nil {
			res.Bench = true
			return finish(fmt.Errorf("bad source address %q", *local))
		}
		laddr.IP = ip
	}
	raddr, err := net.ResolveUDPAddr("udp", *connect)
	if err != nil {
		res.Bench = true
		return finish(err)
	}
	udp, err := net.ListenUDP("udp", laddr)
	if err != nil {
		res.Bench = true
		return finish(err)
	}
	defer udp.Close()
	tr := &quic.Transport{Conn: udp}
	defer tr.Close()
	conn, err := tr.Dial(ctx, raddr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{*alpn}}, //nolint:gosec
		&quic.Config{DisablePathMTUDiscovery: *noPMTUD, MaxIdleTimeout: *timeout})
	if err != nil {
		return finish(fmt.Errorf("handshake: %w", err))
	}
	defer conn.CloseWithError(0, "")
	str, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return finish(fmt.Errorf("open stream: %w", err))
	}
	if _, err := fmt.Fprintf(str, "GET %s\r\n", *path); err != nil {
		return finish(fmt.Errorf("request: %w", err))
	}
	str.Close()
	go func() { <-ctx.Done(); str.CancelRead(0) }()
	n, err := io.Copy(io.Discard, str)
	res.Received = n
	if err == nil || errors.Is(err, io.EOF) {
		res.Complete = want < 0 || n == want
		if !res.Complete {
			err = fmt.Errorf("the answer ended after %d of %d octets", n, want)
		}
	} else if ctx.Err() != nil {
		err = fmt.Errorf("no end of the answer within %s", *timeout)
	}
	return finish(err)
}
