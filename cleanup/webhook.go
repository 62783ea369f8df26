package cleanup

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// webhookClient is the dispatcher's HTTP client: it never follows redirects (a 3xx is a failed
// delivery, so a receiver cannot bounce notifications elsewhere), and unless allowPrivate it
// refuses to connect to loopback, private, link-local and unspecified addresses, checked on
// the address actually dialled (so DNS cannot point a public name at an internal service).
func webhookClient(allowPrivate bool) *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	if !allowPrivate {
		dialer.Control = func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			ip := net.ParseIP(host)
			if ip == nil || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsUnspecified() {
				return fmt.Errorf("cleanup: %w: %s", errPrivateAddress, host)
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

var errPrivateAddress = errors.New("webhooks to loopback, private or link-local addresses are refused (allow them with --webhook-allow-private)")

// WithPrivateWebhooks allows (or refuses) webhook deliveries to loopback, private and
// link-local addresses. Refused by default.
func WithPrivateWebhooks(allow bool) Option {
	return func(s *Service) { s.client = webhookClient(allow) }
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
