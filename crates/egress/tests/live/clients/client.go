// Sends the egress tests' sequence of requests with Go's default transport (net/http), through
// the proxy the environment names (HTTPS_PROXY, HTTP_PROXY; Go never proxies loopback
// addresses, so the tests use names that are not), trusting SSL_CERT_FILE, and prints each
// answer's method and status.
//
//	go run client.go SECRET
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
)

func main() {
	secret := os.Args[1]
	mutation := `{"query":"mutation AddComment($b: String!) { addComment(body: $b) { id } }","variables":{"b":"` + secret + `"}}`
	steps := [][3]string{
		{"GET", "https://api.fake.test/v1/items/42?api_key=" + secret, ""},
		{"POST", "https://api.fake.test/graphql", mutation},
		{"DELETE", "https://api.fake.test/v1/items/42", ""},
		{"POST", "http://hooks.fake.test/services/T0123ABCD/B0123ABCD/" + secret, `{"text":"` + secret + `"}`},
	}
	for _, s := range steps {
		var body io.Reader
		if s[2] != "" {
			body = strings.NewReader(s[2])
		}
		req, err := http.NewRequest(s[0], s[1], body)
		if err != nil {
			panic(err)
		}
		req.Header.Set("Authorization", "Bearer "+secret)
		req.Header.Set("Cookie", "session="+secret)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		fmt.Println(s[0], resp.StatusCode)
	}
}
