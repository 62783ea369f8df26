package auth

import (
	"context"
	"errors"
	"fmt"
)

// Credential is what a request presented, as the HTTP shell verified it (once, for every face):
// the faces read it from the context and only check the scope their route needs.
type Credential struct {
	// Presented is true when the request carried an Authorization header at all.
	Presented bool
	// Token is the verified token; zero unless Err is nil and Presented is true.
	Token Token
	// Err is why the header did not verify: ErrMalformed, ErrUnknownToken, or the store's
	// failure to look the token up (a database error, not the client's fault).
	Err error
}

// Verified reports whether the request carried a token that verified.
func (c Credential) Verified() bool { return c.Presented && c.Err == nil }

// ErrMalformed means the Authorization header is not `Bearer <token>`.
var ErrMalformed = errors.New("auth: the Authorization header must be `Bearer <token>`")

// ErrNoCredential means the request carried no Authorization header.
var ErrNoCredential = errors.New("auth: no token presented")

// ScopeError means a verified token lacks the scope a request needs.
type ScopeError struct {
	Token Token
	Need  Scope
}

func (e *ScopeError) Error() string {
	return fmt.Sprintf("auth: token %q has scopes %v; this request needs %s", e.Token.Name, e.Token.Scopes, e.Need)
}

type credentialKey struct{}

// WithCredential returns ctx carrying the request's verified credential.
func WithCredential(ctx context.Context, c Credential) context.Context {
	return context.WithValue(ctx, credentialKey{}, c)
}

// CredentialFrom is the credential the shell verified for this request (zero when none was
// presented or the request did not pass through the shell).
func CredentialFrom(ctx context.Context) Credential {
	c, _ := ctx.Value(credentialKey{}).(Credential)
	return c
}

// TokenFrom is the request's verified token, if it carried one.
func TokenFrom(ctx context.Context) (Token, bool) {
	c := CredentialFrom(ctx)
	return c.Token, c.Verified()
}

// Require returns the request's token when it verified and grants need: otherwise
// ErrNoCredential, ErrMalformed, ErrUnknownToken, the look-up's error, or a *ScopeError. Each
// face words these in its own error model.
func Require(ctx context.Context, need Scope) (Token, error) {
	c := CredentialFrom(ctx)
	switch {
	case !c.Presented:
		return Token{}, ErrNoCredential
	case c.Err != nil:
		return Token{}, c.Err
	case !c.Token.Allows(need):
		return Token{}, &ScopeError{Token: c.Token, Need: need}
	}
	return c.Token, nil
}

// Check verifies an Authorization header value: the credential the shell puts in the context.
// A nil Store knows no token.
func (s *Store) Check(ctx context.Context, header string) Credential {
	if header == "" {
		return Credential{}
	}
	secret, ok := BearerSecret(header)
	if !ok {
		return Credential{Presented: true, Err: ErrMalformed}
	}
	if s == nil {
		return Credential{Presented: true, Err: ErrUnknownToken}
	}
	tok, err := s.Verify(ctx, secret)
	return Credential{Presented: true, Token: tok, Err: err}
}
