package notify

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"testing"
)

// TestRefusedAddress: a webhook reaches public unicast addresses only; every internal,
// shared, reserved or translated range is refused, and an IPv4 address dressed as IPv6 is
// judged as itself.
func TestRefusedAddress(t *testing.T) {
	for _, tc := range []struct {
		addr    string
		refused bool
	}{
		{"93.184.215.14", false},
		{"8.8.8.8", false},
		{"2606:4700::1111", false},
		{"::ffff:93.184.215.14", false},
		{"100.63.255.255", false},
		{"100.128.0.0", false},
		{"198.20.0.1", false},

		{"127.0.0.1", true},
		{"10.1.2.3", true},
		{"172.16.0.1", true},
		{"192.168.1.1", true},
		{"169.254.169.254", true},
		{"0.0.0.0", true},
		{"0.1.2.3", true},
		{"100.64.0.1", true},
		{"100.100.100.200", true}, // a cloud's metadata service
		{"100.127.255.254", true},
		{"192.0.0.170", true},
		{"192.0.2.1", true},
		{"198.18.0.1", true},
		{"198.19.255.255", true},
		{"198.51.100.7", true},
		{"203.0.113.9", true},
		{"224.0.0.1", true},
		{"239.255.255.250", true},
		{"240.0.0.1", true},
		{"255.255.255.255", true},
		{"::1", true},
		{"::", true},
		{"fe80::1", true},
		{"fe80::1%eth0", true},
		{"fc00::1", true},
		{"fd12:3456::1", true},
		{"fec0::1", true},
		{"ff02::1", true},
		{"ff05::2", true},
		{"64:ff9b::a64:6464", true},      // NAT64 of 100.100.100.200
		{"64:ff9b::7f00:1", true},        // NAT64 of 127.0.0.1
		{"64:ff9b:1::a00:1", true},       // local-use NAT64
		{"2002:a9fe:a9fe::1", true},      // 6to4 of 169.254.169.254
		{"2002:5db8:d70e::1", true},      // 6to4, even of a public address: a relay dials it
		{"2001:0:4136:e378::1", true},    // Teredo
		{"2001:db8::1", true},            // documentation
		{"100::1", true},                 // discard-only
		{"::7f00:1", true},               // IPv4-compatible 127.0.0.1
		{"::ffff:127.0.0.1", true},       // IPv4-mapped
		{"::ffff:10.0.0.1", true},        // IPv4-mapped
		{"::ffff:100.100.100.200", true}, // IPv4-mapped metadata
		{"::ffff:169.254.169.254", true},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			ip, err := netip.ParseAddr(tc.addr)
			if err != nil {
				t.Fatal(err)
			}
			if got := refusedAddress(ip); got != tc.refused {
				t.Fatalf("refusedAddress(%s) = %v, want %v", tc.addr, got, tc.refused)
			}
		})
	}
}

// TestWebhookDialRefusesInternalAddresses: the client refuses at the dial, before any byte is
// sent, whichever form the address takes.
func TestWebhookDialRefusesInternalAddresses(t *testing.T) {
	c := webhookClient(false)
	for _, u := range []string{"http://100.100.100.200/latest/meta-data", "http://[::ffff:127.0.0.1]:1/", "http://[64:ff9b::a64:6464]/", "http://198.18.0.1/"} {
		req, err := http.NewRequestWithContext(context.Background(), "POST", u, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		if !errors.Is(err, errPrivateAddress) {
			t.Errorf("POST %s: %v, want refused as private", u, err)
		}
	}
}
