// Command testserver is an MCP server over stdio for Parley's tests: tools
// that echo, add, sleep, return an image, crash and add tools, and modes
// that misbehave (-garbage, -noinit, -stubborn). Tests build it with
// mcptest.TestServerBinary.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	garbage := flag.Bool("garbage", false, "write non-JSON to stdout instead of serving")
	noinit := flag.Bool("noinit", false, "read stdin but never answer")
	spawn := flag.Bool("spawn", false, "start a child `sleep 300` (its pid goes to -childpid)")
	childPID := flag.String("childpid", "", "file to write the spawned child's pid to")
	pidFile := flag.String("pidfile", "", "file to write this process's pid to")
	stubborn := flag.Bool("stubborn", false, "ignore SIGTERM, and stay after stdin closes")
	stderrEnv := flag.String("stderr-env", "", "print this environment variable's value to stderr at start")
	flag.Parse()

	fmt.Fprintln(os.Stderr, "testserver: starting")
	if *stderrEnv != "" {
		fmt.Fprintf(os.Stderr, "testserver: %s=%s\n", *stderrEnv, os.Getenv(*stderrEnv))
	}
	if *pidFile != "" {
		writeFile(*pidFile, strconv.Itoa(os.Getpid()))
	}
	if *spawn {
		// Not in a group of its own and without a parent-death signal: it
		// is for checking that the client ends the whole process group.
		cmd := exec.Command("sleep", "300")
		if err := cmd.Start(); err != nil {
			fail("spawning: %v", err)
		}
		if *childPID != "" {
			writeFile(*childPID, strconv.Itoa(cmd.Process.Pid))
		}
	}
	switch {
	case *garbage:
		fmt.Println("this is not JSON-RPC")
		_, _ = io.Copy(io.Discard, os.Stdin)
		return
	case *noinit:
		_, _ = io.Copy(io.Discard, os.Stdin)
		return
	}
	if *stubborn {
		signal.Ignore(syscall.SIGTERM)
	}
	if err := newServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fail("serving: %v", err)
	}
	if *stubborn {
		time.Sleep(time.Hour) // only SIGKILL ends it
	}
}

func newServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "testserver", Version: "v1"}, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Text string `json:"text"`
		}) (*mcp.CallToolResult, any, error) {
			return text(in.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Adds two integers."},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			A int `json:"a"`
			B int `json:"b"`
		}) (*mcp.CallToolResult, any, error) {
			return text(strconv.Itoa(in.A + in.B)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "sleep", Description: "Sleeps for ms milliseconds, or until cancelled."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in struct {
			MS int `json:"ms"`
		}) (*mcp.CallToolResult, any, error) {
			t := time.NewTimer(time.Duration(in.MS) * time.Millisecond)
			defer t.Stop()
			select {
			case <-t.C:
				return text("slept"), nil, nil
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		})
	mcp.AddTool(s, &mcp.Tool{Name: "image", Description: "Returns a small PNG."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/png", Data: smallPNG()}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exits the process with status 3."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "testserver: crashing on purpose")
			os.Exit(3)
			return nil, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "getenv", Description: "Returns an environment variable's value."},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Name string `json:"name"`
		}) (*mcp.CallToolResult, any, error) {
			return text(os.Getenv(in.Name)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add_tool", Description: "Adds a tool called name (so the tool list changes)."},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Name string `json:"name"`
		}) (*mcp.CallToolResult, any, error) {
			name := in.Name
			s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return text("I am " + name), nil
				})
			return text("added " + name), nil, nil
		})
	return s
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// smallPNG is a 2×2 red PNG.
func smallPNG() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	for x := range 2 {
		for y := range 2 {
			img.Set(x, y, color.RGBA{R: 255, A: 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		fail("encoding PNG: %v", err)
	}
	return b.Bytes()
}

// writeFile writes atomically, so a reader never sees half a pid.
func writeFile(path, content string) {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		fail("writing %s: %v", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		fail("writing %s: %v", path, err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "testserver: "+format+"\n", args...)
	os.Exit(1)
}
