package clientconfig

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/offsetagent/offsetagent/internal/jaas"
)

// JAAS login modules whose options carry a username and password, as sasl.jaas.config names
// them. Kafka's SASL clients take the credentials from whichever of the two is configured, so
// either serves PLAIN and SCRAM.
const (
	plainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	scramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
)

// parseJAAS reads the value of sasl.jaas.config as Kafka's JaasConfig does (package jaas):
// exactly one entry `<LoginModule> <flag> key=value ... ;`. Only the Plain and Scram login
// modules are accepted, with the options username and password (and ScramLoginModule's
// tokenauth=false).
//
// No error carries a part of the text, which holds a password, and a malformed one (a value
// with a blank not quoted, a forgotten option name) can put any part of it where a login
// module, a control flag or an option name is expected. Errors name the kind of problem and
// its position (the character, counted from 1 in the value), and name a word only when it is
// one of the login module classes or option names of jaasKnownWords, the repository's own
// text.
func parseJAAS(s string) (user, password string, err error) {
	cfg, err := jaas.Parse(s)
	if err != nil {
		return "", "", jaasError(s, err)
	}
	if len(cfg.Entries) > 1 {
		return "", "", errors.New("more than one login module: give exactly one")
	}
	e := cfg.Entries[0]
	switch {
	case e.Module == plainLoginModule || e.Module == scramLoginModule:
	case slices.Contains(jaasKnownWords, e.Module):
		return "", "", fmt.Errorf("login module %q not supported: use %s or %s", e.Module, plainLoginModule, scramLoginModule)
	default:
		return "", "", fmt.Errorf("character %d: not a login module offsetagent supports: begin with %s or %s", charAt(s, e.ModuleAt), plainLoginModule, scramLoginModule)
	}
	opts := map[string]string{}
	for _, o := range e.Options {
		opts[o.Name] = o.Value
		if o.Name != "username" && o.Name != "password" && !(o.Name == "tokenauth" && e.Module == scramLoginModule) {
			return "", "", fmt.Errorf("%s not supported: give username and password only", jaasOption(s, o))
		}
	}
	if v, ok := opts["tokenauth"]; ok && !strings.EqualFold(v, "false") {
		return "", "", errors.New("option tokenauth: delegation tokens are not supported: remove it")
	}
	user, ok := opts["username"]
	if !ok || user == "" {
		return "", "", errors.New("option username: missing")
	}
	password, ok = opts["password"]
	if !ok {
		return "", "", errors.New("option password: missing")
	}
	return user, password, nil
}

// jaasError words a refusal of Kafka's reading of s for the user, quoting nothing of it.
func jaasError(s string, err error) error {
	var je *jaas.Error
	if !errors.As(err, &je) {
		return err
	}
	switch je.Want {
	case jaas.WantModule:
		if je.End {
			return errors.New("empty: give a login module, e.g. " + scramLoginModule + " required username=\"alice\" password=\"...\";")
		}
		return fmt.Errorf("character %d: not a login module offsetagent supports: begin with %s or %s", je.Char, plainLoginModule, scramLoginModule)
	case jaas.WantFlag:
		if je.End {
			return errors.New("no control flag after the login module: want required")
		}
		return fmt.Errorf("character %d: not a control flag: want required", je.Char)
	case jaas.WantSemicolon:
		if je.Unclosed >= 0 {
			return fmt.Errorf("entry not terminated by a semicolon: the quoted value at character %d has no closing quote on its line", charAt(s, je.Unclosed))
		}
		return errors.New("entry not terminated by a semicolon")
	case jaas.WantEquals:
		return fmt.Errorf("%s: value not specified (is a value with blanks or punctuation not quoted?)", jaasOption(s, je.Option))
	case jaas.WantValue:
		return fmt.Errorf("%s: value not specified (quote values: key=\"...\")", jaasOption(s, je.Option))
	}
	return err
}

// jaasKnownWords are the login module classes and option names of Kafka's and Java's login
// modules that errors name: any other word of a JAAS text may be a part of a password.
var jaasKnownWords = []string{
	"com.sun.security.auth.module.Krb5LoginModule", "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
	"username", "password", "tokenauth", "serviceName", "useKeyTab", "keyTab", "principal", "storeKey", "useTicketCache",
	"debug", "clientId", "clientSecret", "scope", "unsecuredLoginStringClaim_sub",
}

// jaasOption names the option o of s: by name when it is a known one, else by position.
func jaasOption(s string, o jaas.Option) string {
	if slices.Contains(jaasKnownWords, o.Name) {
		return fmt.Sprintf("option %q", o.Name)
	}
	return fmt.Sprintf("the option at character %d", charAt(s, o.NameAt))
}

// charAt is the byte at of s counted in characters from 1.
func charAt(s string, at int) int { return utf8.RuneCountInString(s[:at]) + 1 }
