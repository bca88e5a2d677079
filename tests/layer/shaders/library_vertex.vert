#version 450
// A triangle that covers the whole framebuffer, from the vertex index alone (no
// vertex buffers), for the graphics pipeline library test.
void main() {
  const vec2 corners[3] = vec2[](vec2(-1.0, -1.0), vec2(3.0, -1.0), vec2(-1.0, 3.0));
  gl_Position = vec4(corners[gl_VertexIndex], 0.0, 1.0);
}
