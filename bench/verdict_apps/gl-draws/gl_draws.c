/* Heavy fragment shading on a surfaceless EGL pbuffer: each frame a full-screen quad whose every pixel loops, read
 * back (one pixel) and swapped. On llvmpipe its named threads rasterize while the app's thread waits for them in
 * glReadPixels: the software renderer's share. */
#include "../common/gl_context.h"

static const char *VERTEX =
    "#version 300 es\n"
    "in vec2 at;\n"
    "out vec2 uv;\n"
    "void main() { uv = at; gl_Position = vec4(at, 0.0, 1.0); }\n";
static const char *FRAGMENT =
    "#version 300 es\n"
    "precision highp float;\n"
    "in vec2 uv;\n"
    "uniform int rounds;\n"
    "out vec4 colour;\n"
    "void main() {\n"
    "  float x = uv.x, y = uv.y;\n"
    "  for (int k = 0; k < rounds; k++) { x = sin(x * 1.3 + y); y = cos(y * 0.7 + x); }\n"
    "  colour = vec4(x, y, 0.5, 1.0);\n"
    "}\n";

static GLuint compiled(GLenum kind, const char *source) {
    GLuint shader = glCreateShader(kind);
    glShaderSource(shader, 1, &source, NULL);
    glCompileShader(shader);
    GLint ok = 0;
    glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
    if (!ok) { fprintf(stderr, "a shader did not compile\n"); exit(1); }
    return shader;
}

int main(int argc, char **argv) {
    int frames = frames_of(argc, argv, 100);
    gl_open(512, 512, 3, 0);
    GLuint program = glCreateProgram();
    glAttachShader(program, compiled(GL_VERTEX_SHADER, VERTEX));
    glAttachShader(program, compiled(GL_FRAGMENT_SHADER, FRAGMENT));
    glBindAttribLocation(program, 0, "at");
    glLinkProgram(program);
    glUseProgram(program);
    glUniform1i(glGetUniformLocation(program, "rounds"), argc > 2 ? atoi(argv[2]) : 20);
    static const float quad[] = {-1, -1, 1, -1, -1, 1, 1, 1};
    GLuint buffer;
    glGenBuffers(1, &buffer);
    glBindBuffer(GL_ARRAY_BUFFER, buffer);
    glBufferData(GL_ARRAY_BUFFER, sizeof quad, quad, GL_STATIC_DRAW);
    glEnableVertexAttribArray(0);
    glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 0, 0);
    unsigned char pixel[4];
    for (int frame = 0; frame < frames; frame++) {
        glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
        glReadPixels(0, 0, 1, 1, GL_RGBA, GL_UNSIGNED_BYTE, pixel);
        eglSwapBuffers(gl_display, gl_surface);
    }
    printf("%d frames\n", frames);
    return 0;
}
