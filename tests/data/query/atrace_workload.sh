#!/bin/bash
# Writes atrace lines to trace_marker from three processes (each echo is one write).
m=/sys/kernel/tracing/trace_marker
app() {  # $1: name
  local pid=$BASHPID
  for i in $(seq 1 40); do
    echo "B|$pid|$1 frame $i"
    echo "B|$pid|draw"
    echo "C|$pid|$1 queue|$i"
    echo "E|$pid"
    [ $((i % 10)) -eq 0 ] && echo "S|$pid|upload|$i"
    [ $((i % 10)) -eq 5 ] && echo "F|$pid|upload|$((i - 5))"
    echo "I|$pid|vsync"
    echo "E|$pid"
  done > $m
  echo "N|$pid|events|done" > $m
  echo "G|$pid|jobs|job $1|7" > $m
  echo "H|$pid|jobs|7" > $m
  echo "marker from $1" > $m
}
app alpha & app beta & app gamma & wait
