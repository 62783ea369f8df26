package notify

// Webhooks: where each principal's notifications go, and the client that delivers to them.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/webhook"
)

// webhookClient is the dispatcher's HTTP client: it never follows redirects (a 3xx is a failed
// delivery, so a receiver cannot bounce notifications elsewhere), and unless allowPrivate it
// refuses to connect to any address that is not public unicast (refusedAddress), checked on
// the address actually dialled (so DNS cannot point a public name at an internal service).
func webhookClient(allowPrivate bool) *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	if !allowPrivate {
		dialer.Control = func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			if ip, err := netip.ParseAddr(host); err != nil || refusedAddress(ip) {
				return fmt.Errorf("notify: %w: %s", errPrivateAddress, host)
			}
			return nil
		}
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.DialContext = dialer.DialContext
	transport.Proxy = nil // a proxy would dial on our behalf, past the address check
	return &http.Client{
		Timeout:   10 * time.Second,
		Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// refusedRanges are the non-public ranges net/netip's predicates do not cover: shared address
// space (carrier-grade NAT, where clouds put metadata services such as 100.100.100.200), IETF
// protocol assignments, benchmarking, "this network", reserved and broadcast; and in IPv6 the
// translations that embed an IPv4 address the dialler would reach through a gateway (NAT64,
// 6to4, Teredo, IPv4-compatible) and the deprecated site-local range.
var refusedRanges = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"), // reserved, and 255.255.255.255
	netip.MustParsePrefix("::/96"),       // IPv4-compatible (deprecated)
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("100::/64"),  // discard-only
	netip.MustParsePrefix("2001::/32"), // Teredo
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("2002::/16"), // 6to4
	netip.MustParsePrefix("fec0::/10"),
}

// refusedAddress says whether a webhook may not connect to ip: anything not a public unicast
// address. An IPv4-mapped IPv6 address (::ffff:10.0.0.1) is judged as the IPv4 address it is.
func refusedAddress(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return true
	}
	for _, p := range refusedRanges {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

var errPrivateAddress = errors.New("webhooks to loopback, private or link-local addresses are refused (allow them with --webhook-allow-private)")

// WithPrivateWebhooks allows (or refuses) webhook deliveries to loopback, private and
// link-local addresses. Refused by default.
func WithPrivateWebhooks(allow bool) Option {
	return func(s *Service) { s.client = webhookClient(allow) }
}

// SetWebhook sets (or with an empty URL removes) where a principal's notifications go.
func (s *Service) SetWebhook(ctx context.Context, principal, rawURL string) error {
	if principal == "" {
		return &catalog.Error{Kind: catalog.ErrInvalid, Field: "principal", Message: "principal is empty"}
	}
	if rawURL == "" {
		_, err := s.db.Webhook.Delete().Where(webhook.Principal(principal)).Exec(ctx)
		return err
	}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &catalog.Error{Kind: catalog.ErrInvalid, Field: "url", Message: fmt.Sprintf("webhook URL %q is not an http(s) URL", rawURL)}
	}
	err = s.db.Webhook.Create().SetPrincipal(principal).SetURL(rawURL).SetUpdatedAt(s.clock()).Exec(ctx)
	if ent.IsConstraintError(err) {
		_, err = s.db.Webhook.Update().Where(webhook.Principal(principal)).SetURL(rawURL).SetUpdatedAt(s.clock()).Save(ctx)
	}
	return err
}

// redact removes what a webhook URL may carry as a secret (user info, query, fragment) from a
// delivery error, so it can be stored and shown to anyone who may read proposals.
func redact(msg, rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return strings.ReplaceAll(msg, rawURL, "[webhook URL]")
	}
	safe := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		safe += " (secrets redacted)"
	}
	msg = strings.ReplaceAll(msg, rawURL, safe)
	if u.RawQuery != "" {
		msg = strings.ReplaceAll(msg, u.RawQuery, "[redacted]")
	}
	if u.User != nil {
		msg = strings.ReplaceAll(msg, u.User.String(), "[redacted]")
	}
	return msg
}
