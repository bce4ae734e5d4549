#!/bin/sh
# Sends the egress tests' sequence of requests with curl, through the proxy the environment
# names (curl reads https_proxy and http_proxy, and CURL_CA_BUNDLE), and prints each answer's
# method and status.
#
#     client.sh SECRET
set -eu
secret="$1"
step() {
  method="$1"; url="$2"; body="${3:-}"
  code=$(curl -sS -o /dev/null -w '%{http_code}' -X "$method" \
    -H "Authorization: Bearer $secret" -H "Cookie: session=$secret" \
    -H 'Content-Type: application/json' ${body:+--data "$body"} "$url")
  echo "$method $code"
}
step GET "https://api.fake.test/v1/items/42?api_key=$secret"
step POST https://api.fake.test/graphql \
  "{\"query\":\"mutation AddComment(\$b: String!) { addComment(body: \$b) { id } }\",\"variables\":{\"b\":\"$secret\"}}"
step DELETE https://api.fake.test/v1/items/42
step POST "http://hooks.fake.test/services/T0123ABCD/B0123ABCD/$secret" "{\"text\":\"$secret\"}"
