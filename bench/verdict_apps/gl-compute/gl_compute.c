/* A GLES 3.1 compute app on a surfaceless EGL context: each frame one heavy glDispatchCompute, then glFinish (the
 * frame's end). On llvmpipe the dispatch runs on Mesa's compute threads, which have no names, while the app's
 * thread waits for them inside glDispatchCompute: its time goes to the software renderer. */
#include "../common/gl_context.h"

static const char *SHADER =
    "#version 310 es\n"
    "layout(local_size_x = 64) in;\n"
    "layout(std430, binding = 0) buffer Data { float v[]; };\n"
    "uniform int rounds;\n"
    "void main() {\n"
    "  uint i = gl_GlobalInvocationID.x;\n"
    "  float x = v[i];\n"
    "  for (int k = 0; k < rounds; k++) x = x * 0.999 + sin(x + float(k));\n"
    "  v[i] = x;\n"
    "}\n";

int main(int argc, char **argv) {
    int frames = frames_of(argc, argv, 150);
    gl_open(16, 16, 3, 1);
    GLuint shader = glCreateShader(GL_COMPUTE_SHADER);
    glShaderSource(shader, 1, &SHADER, NULL);
    glCompileShader(shader);
    GLint ok = 0;
    glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
    if (!ok) { fprintf(stderr, "the compute shader did not compile\n"); return 1; }
    GLuint program = glCreateProgram();
    glAttachShader(program, shader);
    glLinkProgram(program);
    glUseProgram(program);
    enum { GROUPS = 64, SIZE = GROUPS * 64 };
    static float data[SIZE];
    for (int i = 0; i < SIZE; i++) data[i] = (float)i / SIZE;
    GLuint buffer;
    glGenBuffers(1, &buffer);
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, buffer);
    glBufferData(GL_SHADER_STORAGE_BUFFER, sizeof data, data, GL_DYNAMIC_COPY);
    glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 0, buffer);
    glUniform1i(glGetUniformLocation(program, "rounds"), argc > 2 ? atoi(argv[2]) : 1500);
    for (int frame = 0; frame < frames; frame++) {
        glDispatchCompute(GROUPS, 1, 1);
        glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT);
        glFinish();
    }
    printf("%d frames\n", frames);
    return 0;
}
