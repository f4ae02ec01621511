package deploy

import (
	"os"
	"strings"
	"testing"
)

// TestDockerfileEndsWithContainerfile: the multi-stage Dockerfile (for
// builders with a registry) ends with deploy/image/Containerfile's
// instructions verbatim, so both build the same image from the same
// scripts/image-rootfs.sh layout; and that image runs as the numeric
// non-root user and keeps /metrics on loopback.
func TestDockerfileEndsWithContainerfile(t *testing.T) {
	cf, err := os.ReadFile("image/Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	df, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	c := string(cf)
	final := c[strings.Index(c, "\nFROM scratch\n")+1:]
	if !strings.HasSuffix(string(df), final) {
		t.Errorf("../Dockerfile does not end with image/Containerfile's final stage:\n%s", final)
	}
	if !strings.Contains(string(df), "scripts/image-rootfs.sh /rootfs") {
		t.Error("../Dockerfile does not lay out its rootfs with scripts/image-rootfs.sh")
	}
	for _, want := range []string{"\nUSER 65532:65532\n", `"-metrics-addr", "127.0.0.1:9100"`, "\nCOPY --from=rootfs / /\n"} {
		if !strings.Contains(final, want) {
			t.Errorf("image/Containerfile lacks %q", want)
		}
	}
	if strings.Contains(string(df), "0.0.0.0:9100\"") {
		t.Error("../Dockerfile publishes /metrics on 0.0.0.0 by default")
	}
}
