// asr_gz.cc - see asr_gz.h. The only C++ of asr: the C core never links Gazebo.
#include "asr_gz.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include <ignition/common/Profiler.hh>
#include <ignition/physics/FeatureList.hh>
#include <ignition/physics/ForwardStep.hh>
#include <ignition/physics/GetEntities.hh>
#include <ignition/physics/Joint.hh>
#include <ignition/physics/RequestEngine.hh>
#include <ignition/physics/sdf/ConstructWorld.hh>
#include <ignition/plugin/Loader.hh>
#include <sdf/Joint.hh>
#include <sdf/JointAxis.hh>
#include <sdf/Model.hh>
#include <sdf/Physics.hh>
#include <sdf/Root.hh>
#include <sdf/World.hh>

#ifndef ASR_GZ_DARTSIM_PLUGIN
#define ASR_GZ_DARTSIM_PLUGIN "libignition-physics5-dartsim-plugin.so.5"
#endif

namespace phys = ignition::physics;

namespace {

struct Features : phys::FeatureList<phys::ForwardStep, phys::GetEntities, phys::GetBasicJointState,
                                    phys::SetBasicJointState, phys::GetBasicJointProperties,
                                    phys::sdf::ConstructSdfWorld> {};

using EnginePtr = phys::Engine3dPtr<Features>;
using WorldPtr = phys::World3dPtr<Features>;
using JointPtr = phys::Joint3dPtr<Features>;

std::mutex g_mutex;                                 // plugin loading, world creation / destruction
std::unique_ptr<ignition::plugin::Loader> g_loader; // loaded once, kept for the process
std::string g_plugin_name;

void set_err(char* err, int err_len, const std::string& msg) {
    if (err && err_len > 0) std::snprintf(err, static_cast<size_t>(err_len), "%s", msg.c_str());
}

// Puts this library in the process's global symbol scope, so that the DART plugin, loaded next
// with RTLD_LOCAL, binds its calls of ignition::common::Profiler's constructor (through its PLT)
// to the definition at the end of this file.
void promote_to_global() {
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&asr_gz_create), &info) && info.dli_fname)
        dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL); // kept: never closed
}

// The dartsim plugin's name, loading its library on first use (caller holds g_mutex).
std::string dartsim_plugin() {
    if (!g_plugin_name.empty()) return g_plugin_name;
    promote_to_global();
    auto loader = std::make_unique<ignition::plugin::Loader>();
    auto names = loader->LoadLib(ASR_GZ_DARTSIM_PLUGIN);
    for (const auto& n : names)
        if (n.find("dartsim") != std::string::npos) g_plugin_name = n;
    if (g_plugin_name.empty())
        throw std::runtime_error("cannot load gz-physics' DART plugin " ASR_GZ_DARTSIM_PLUGIN
                                 " (Debian: apt-get install libignition-physics5-dartsim-plugin5)");
    g_loader = std::move(loader);
    return g_plugin_name;
}

} // namespace

struct asr_gz_world {
    ignition::plugin::PluginPtr plugin; // this world's own plugin instance and engine
    EnginePtr engine;
    WorldPtr world;
    std::vector<JointPtr> joints;
    std::vector<double> qpos, qvel, qfrc;
    std::chrono::steady_clock::duration step;
    double dt = 0.0;
    long long nstep = 0;
    phys::ForwardStep::Input input;
    phys::ForwardStep::State state;
    phys::ForwardStep::Output output;

    void read() {
        for (size_t j = 0; j < joints.size(); ++j) {
            qpos[j] = joints[j]->GetPosition(0);
            qvel[j] = joints[j]->GetVelocity(0);
        }
    }
};

static asr_gz_world* create(const char* sdf_path, const char* model_name,
                            const char* const* joint_names, int n_joint, double dt) {
    if (!sdf_path) throw std::runtime_error("sdf_path is NULL");
    const std::string file(sdf_path);
    if (n_joint < 0 || (n_joint > 0 && !joint_names))
        throw std::runtime_error(file + ": n_joint must be >= 0 with joint_names given");
    if (std::FILE* f = std::fopen(sdf_path, "rb")) {
        std::fclose(f);
    } else {
        throw std::runtime_error(file + ": no such SDF file (or it cannot be read)");
    }
    sdf::Root root;
    const sdf::Errors errors = root.Load(file);
    if (!errors.empty()) {
        std::string msg = file + ": SDFormat cannot load it: " + errors[0].Message();
        if (errors.size() > 1) msg += " (and " + std::to_string(errors.size() - 1) + " more)";
        throw std::runtime_error(msg);
    }
    if (root.WorldCount() != 1)
        throw std::runtime_error(file + ": expected one <world>, found " +
                                 std::to_string(root.WorldCount()));
    const sdf::World* sdf_world = root.WorldByIndex(0);
    if (!(dt > 0)) {
        const sdf::Physics* p = sdf_world->PhysicsDefault();
        dt = p ? p->MaxStepSize() : 0.0;
    }
    const double ns = std::round(dt * 1e9);
    if (!(dt > 0) || !(ns >= 1) || ns > 1e15 || std::fabs(ns * 1e-9 - dt) > 1e-12 * dt)
        throw std::runtime_error(file + ": time step " + std::to_string(dt) +
                                 " s: must be a positive whole number of nanoseconds");

    auto w = std::make_unique<asr_gz_world>();
    std::lock_guard<std::mutex> lock(g_mutex);
    const std::string plugin_name = dartsim_plugin();
    w->plugin = g_loader->Instantiate(plugin_name);
    if (!w->plugin) throw std::runtime_error("cannot instantiate gz-physics' DART plugin");
    w->engine = phys::RequestEngine3d<Features>::From(w->plugin);
    if (!w->engine) throw std::runtime_error("gz-physics' DART plugin lacks a needed feature");
    w->world = w->engine->ConstructWorld(*sdf_world);
    if (!w->world) throw std::runtime_error(file + ": DART cannot build its world");

    phys::Model3dPtr<Features> model;
    if (model_name) {
        model = w->world->GetModel(std::string(model_name));
        if (!model) throw std::runtime_error(file + ": no model named '" + model_name + "'");
    } else {
        if (w->world->GetModelCount() != 1)
            throw std::runtime_error(file + ": " + std::to_string(w->world->GetModelCount()) +
                                     " models; name the one to actuate");
        model = w->world->GetModel(0);
    }
    for (int j = 0; j < n_joint; ++j) {
        const std::string name = joint_names[j] ? joint_names[j] : "";
        JointPtr joint = model->GetJoint(name);
        if (!joint)
            throw std::runtime_error(file + ": model '" + model->GetName() +
                                     "' has no joint named '" + name + "'");
        if (joint->GetDegreesOfFreedom() != 1)
            throw std::runtime_error(file + ": joint '" + name + "' has " +
                                     std::to_string(joint->GetDegreesOfFreedom()) +
                                     " degrees of freedom; asr actuates 1-DOF joints only");
        w->joints.push_back(joint);
    }
    w->qpos.assign(n_joint, 0.0);
    w->qvel.assign(n_joint, 0.0);
    w->qfrc.assign(n_joint, 0.0);
    w->dt = dt;
    w->step = std::chrono::nanoseconds(static_cast<long long>(ns));
    w->input.Get<std::chrono::steady_clock::duration>() = w->step;
    w->read();
    return w.release();
}

extern "C" {

asr_gz_world* asr_gz_create(const char* sdf_path, const char* model_name,
                            const char* const* joint_names, int n_joint, double dt, char* err,
                            int err_len) {
    try {
        return create(sdf_path, model_name, joint_names, n_joint, dt);
    } catch (const std::exception& e) {
        set_err(err, err_len, e.what());
    } catch (...) {
        set_err(err, err_len, std::string(sdf_path ? sdf_path : "(null)") + ": unknown error");
    }
    return nullptr;
}

void asr_gz_step1(const void*, void*) {
    // qpos / qvel were read when the state last changed (create, set_state, step2): reading the
    // joints again here would be the same work twice per step
}

void asr_gz_step2(const void*, void* world) {
    auto* w = static_cast<asr_gz_world*>(world);
    try {
        for (size_t j = 0; j < w->joints.size(); ++j) w->joints[j]->SetForce(0, w->qfrc[j]);
        w->world->Step(w->output, w->state, w->input);
        ++w->nstep;
        w->read();
    } catch (...) {
        for (size_t j = 0; j < w->joints.size(); ++j) w->qpos[j] = w->qvel[j] = NAN;
    }
}

void asr_gz_step_replay(asr_gz_world* const* worlds, int n, int n_step, const double* qfrc) {
    for (int i = 0; i < n; ++i) {
        asr_gz_world* w = worlds[i];
        const size_t nj = w->qfrc.size();
        for (int s = 0; s < n_step; ++s) {
            asr_gz_step1(nullptr, w);
            if (qfrc)
                std::copy_n(qfrc + (static_cast<size_t>(i) * n_step + s) * nj, nj, w->qfrc.data());
            else
                std::fill(w->qfrc.begin(), w->qfrc.end(), 0.0);
            asr_gz_step2(nullptr, w);
        }
    }
}

double* asr_gz_qpos(asr_gz_world* w) { return w ? w->qpos.data() : nullptr; }
double* asr_gz_qvel(asr_gz_world* w) { return w ? w->qvel.data() : nullptr; }
double* asr_gz_qfrc(asr_gz_world* w) { return w ? w->qfrc.data() : nullptr; }
int asr_gz_n_joint(const asr_gz_world* w) { return w ? static_cast<int>(w->joints.size()) : 0; }
double asr_gz_dt(const asr_gz_world* w) { return w ? w->dt : 0.0; }
double asr_gz_time(const asr_gz_world* w) {
    return w ? static_cast<double>(w->nstep) * w->dt : 0.0;
}

int asr_gz_set_state(asr_gz_world* w, const double* q, const double* qd, char* err, int err_len) {
    if (!w) {
        set_err(err, err_len, "world is NULL");
        return -1;
    }
    try {
        for (size_t j = 0; j < w->joints.size(); ++j) {
            if (q) w->joints[j]->SetPosition(0, q[j]);
            if (qd) w->joints[j]->SetVelocity(0, qd[j]);
            w->qfrc[j] = 0.0;
        }
        w->nstep = 0;
        w->read();
        return 0;
    } catch (const std::exception& e) {
        set_err(err, err_len, e.what());
    } catch (...) {
        set_err(err, err_len, "unknown error setting the joint state");
    }
    return -1;
}

void asr_gz_destroy(asr_gz_world* w) {
    if (!w) return;
    std::lock_guard<std::mutex> lock(g_mutex);
    try {
        delete w;
    } catch (...) {
    }
}

} // extern "C"

// Debian's ignition-common 4 builds its profiler with Remotery always on: the DART plugin's first
// profiled call starts a Remotery server listening on 0.0.0.0:17815 in every process that steps
// a world (a port on all interfaces that asr never needs; a second process prints "Can't bind a
// socket"). Nothing turns it off at run time (RemoteryProfilerImpl reads only RMT_PORT and queue
// sizes), so the shim defines the Profiler's constructor itself, without an implementation: the
// profiler is then disabled (Profiler::BeginSample and the rest do nothing without one) and no
// socket is opened. promote_to_global() makes the plugin bind to this definition.
ignition::common::Profiler::Profiler() : impl(nullptr) {}
