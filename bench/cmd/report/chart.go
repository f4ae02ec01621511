package main

import (
	"fmt"
	"image/color"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// writeChart draws two grouped bar charts side by side, median msgs/s and
// median server CPU ns/msg, one bar per server within each config.
func writeChart(path string, groups []*group) error {
	var configs, servers []string
	seenC, seenS := map[string]bool{}, map[string]bool{}
	byKey := map[[2]string]*group{}
	for _, g := range groups {
		if !seenC[g.Config] {
			seenC[g.Config] = true
			configs = append(configs, g.Config)
		}
		if !seenS[g.Server] {
			seenS[g.Server] = true
			servers = append(servers, g.Server)
		}
		byKey[[2]string{g.Config, g.Server}] = g
	}
	tps, err := barPlot("msgs/s (median)", configs, servers, func(g *group) float64 { return g.TPS.Median }, byKey, true)
	if err != nil {
		return err
	}
	cpu, err := barPlot("server CPU ns/msg (median)", configs, servers, func(g *group) float64 { return g.CPU.Median }, byKey, false)
	if err != nil {
		return err
	}
	img := vgimg.New(14*vg.Inch, 5.5*vg.Inch)
	dc := draw.New(img)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadTop: vg.Points(8), PadBottom: vg.Points(8), PadLeft: vg.Points(8), PadRight: vg.Points(8), PadX: vg.Points(24)}
	canvases := plot.Align([][]*plot.Plot{{tps, cpu}}, tiles, dc)
	tps.Draw(canvases[0][0])
	cpu.Draw(canvases[0][1])
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// barPlot makes one grouped bar chart of value per config and server.
func barPlot(title string, configs, servers []string, value func(*group) float64, byKey map[[2]string]*group, legend bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Min = 0
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Points(10)
	w := vg.Points(float64(150) / float64(max(len(servers), 1)))
	for i, s := range servers {
		vals := make(plotter.Values, len(configs))
		for j, c := range configs {
			if g := byKey[[2]string{c, s}]; g != nil && g.TPS.N > 0 {
				vals[j] = value(g)
			}
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", s, err)
		}
		bars.LineStyle.Width = 0
		bars.Color = plotutil.Color(i)
		bars.Offset = w * vg.Length(float64(i)-float64(len(servers)-1)/2)
		p.Add(bars)
		if legend {
			name := s
			if !measured(byKey, configs, s) {
				name += " (failed)"
			}
			p.Legend.Add(name, bars)
		}
	}
	p.Y.Max *= 1.25 // room for the legend above the bars
	p.NominalX(configs...)
	p.X.Label.Text = "configuration"
	return p, nil
}

// measured reports whether server s has a successful run in any config.
func measured(byKey map[[2]string]*group, configs []string, s string) bool {
	for _, c := range configs {
		if g := byKey[[2]string{c, s}]; g != nil && g.TPS.N > 0 {
			return true
		}
	}
	return false
}
