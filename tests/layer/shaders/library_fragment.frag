#version 450
// One colour the test reads back: the pipeline made from libraries drew.
layout(location = 0) out vec4 color;
void main() { color = vec4(0.0, 1.0, 0.0, 1.0); }
